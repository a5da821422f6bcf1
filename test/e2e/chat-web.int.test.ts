import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startTestRedis, type TestRedis } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { Redis } from 'ioredis';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build, type PreviewServer, preview } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';
import { hasSystemBinary } from '../support/system-binary.js';

const CHROMIUM = '/usr/bin/chromium';
const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
/** Set (to a folder, e.g. docs/images): the page's screenshots at 1280 px are written there. */
const SHOTS = process.env.CHAT_WEB_SCREENSHOTS;
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const example = join(root, 'examples', 'chat-web');

// examples/chat-web in Chromium: built by Vite, served on an origin of its own, calling a
// real fleet's chat door across origins (REIN_CORS_ORIGINS) with @ai-sdk/react's useChat.
// Needs Debian's chromium (.ci/run installs it); never downloads a browser.
describe.skipIf(!hasSystemBinary(CHROMIUM, 'chromium', 'the chat page browser suite'))('the chat page (useChat) in a real browser', () => {
  let redis: TestRedis;
  let fleet: Fleet;
  let page: string;
  let browser: Browser;
  const sites: PreviewServer[] = [];
  const outDirs: string[] = [];
  const problems: string[] = [];

  /**
   * Builds the example (a production bundle, as `npm run build` makes it) and serves it with
   * `vite preview` on `port`; `env` is what its vite.config.ts reads (REIN_API_URL for the proxy).
   */
  async function serve(port: number, define: Record<string, string>, env: Record<string, string> = {}): Promise<string> {
    const outDir = mkdtempSync(join(tmpdir(), 'rein-chat-web-'));
    outDirs.push(outDir);
    const saved = { ...process.env };
    // vitest sets NODE_ENV=test, which would bundle React's development build.
    Object.assign(process.env, { NODE_ENV: 'production', ...env });
    try {
      const config = { root: example, logLevel: 'error' as const, define };
      await build({ ...config, build: { outDir, emptyOutDir: true } });
      sites.push(await preview({ ...config, build: { outDir }, preview: { host: '127.0.0.1', port, strictPort: true } }));
    } finally {
      process.env = saved;
    }
    return `http://127.0.0.1:${port}`;
  }

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    // The page on an origin of its own calls the API on another: the API lists the page's origin.
    fleet = await startFleet({ redisUrl: redis.url, workers: 1, env: { REIN_CORS_ORIGINS: `http://127.0.0.1:${port}` } });
    page = await serve(port, { 'import.meta.env.VITE_REIN_API_URL': JSON.stringify(fleet.api) });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    for (const site of sites) await site.close();
    await fleet?.stop();
    await redis?.stop();
    for (const dir of outDirs) rmSync(dir, { recursive: true, force: true });
  });

  const tickets = async () => {
    const client = new Redis(fleet.redisUrl);
    try {
      return await new DemoStore(client).tickets(KEYS.approver.tenantId, '2024001');
    } finally {
      client.disconnect();
    }
  };

  async function signIn(key: string, at = page): Promise<Page> {
    const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    tab.on('pageerror', (err) => problems.push(err.message));
    tab.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    await tab.goto(at);
    await tab.getByLabel('API key').fill(key);
    await tab.getByLabel('API key').press('Enter');
    await tab.locator('#who').waitFor();
    return tab;
  }

  async function shot(tab: Page, name: string) {
    if (!SHOTS) return;
    mkdirSync(join(root, SHOTS), { recursive: true });
    await tab.screenshot({ path: join(root, SHOTS, `${name}.png`), fullPage: true });
  }

  /** Asks the late-order complaint and waits for the approval card of create_ticket, the reads done before it. */
  async function askLateOrder(tab: Page) {
    await tab.getByLabel('Message').fill(LATE_ORDER);
    await tab.getByRole('button', { name: 'Send' }).click();
    const card = tab.getByRole('group', { name: 'Approve create_ticket?' });
    await card.waitFor({ timeout: 45_000 });
    for (const tool of ['query_order', 'search_policy']) {
      const call = tab.getByRole('region', { name: `Tool call ${tool}` });
      expect(await call.locator('.state').textContent(), tool).toBe('done');
      expect(await call.locator('pre').first().textContent()).toContain(tool === 'query_order' ? '2024001' : '');
    }
    const ticket = tab.getByRole('region', { name: 'Tool call create_ticket' });
    expect(await ticket.locator('.state').textContent()).toBe('waiting for approval');
    expect(await ticket.locator('pre').first().textContent()).toContain('"orderNo": "2024001"');
    return card;
  }

  /** The run's one decided approval, as the approver service reads it. */
  async function approvalOf(runId: string, status: 'approved' | 'rejected') {
    const { approvals } = await fleet.client(KEYS.approver.key).approvals.list({ status, tool: 'create_ticket' });
    return approvals.find((a) => a.runId === runId);
  }

  /** The run behind the page's assistant message, read through the API once it has ended. */
  async function runOf(tab: Page, key = KEYS.approver.key) {
    const meta = tab.locator('.message.assistant .meta').last();
    await expect.poll(() => meta.textContent(), { timeout: 45_000 }).toMatch(/· succeeded/);
    const runId = /run (\S+)/.exec((await meta.textContent()) ?? '')?.[1] as string;
    return fleet.client(key).runs.get(runId);
  }

  it('asks the late-order complaint, shows the tool calls and an approval card; approving runs the write and the answer follows', async () => {
    const before = (await tickets()).length;
    const tab = await signIn(KEYS.approver.key);
    expect(await tab.locator('#who').textContent()).toContain('lisi (approver)');
    const card = await askLateOrder(tab);
    // Parked, not run: nothing written until the decision.
    expect(await tickets()).toHaveLength(before);
    await shot(tab, 'chat-web-approval');

    await card.getByRole('button', { name: 'Approve' }).click();
    const run = await runOf(tab);
    expect(run.status).toBe('succeeded');
    const ticket = tab.getByRole('region', { name: 'Tool call create_ticket' });
    expect(await ticket.locator('.state').textContent()).toBe('done');
    expect(await ticket.locator('pre').last().textContent()).toContain('ticketId');
    expect(await tab.locator('.message.assistant .text').last().textContent()).toBe(run.finalAnswer);
    // The step resumed after the decision does not say its thought a second time.
    const thoughts = await tab.locator('.message.assistant .thought').allTextContents();
    expect(thoughts).toHaveLength(3);
    expect(new Set(thoughts).size).toBe(thoughts.length);
    expect(await tickets()).toHaveLength(before + 1);
    expect(await approvalOf(run.id, 'approved')).toMatchObject({ decidedBy: KEYS.approver.userId, toolName: 'create_ticket' });
    await shot(tab, 'chat-web-answer');
    await tab.close();
  });

  it('a rejection with a reason denies the call: the card says so, nothing is written, the run answers without it', async () => {
    const before = (await tickets()).length;
    const tab = await signIn(KEYS.approver.key);
    const card = await askLateOrder(tab);
    await card.getByLabel('Reason (optional)').fill('not before the warehouse confirms');
    await card.getByRole('button', { name: 'Reject' }).click();
    const run = await runOf(tab);
    const ticket = tab.getByRole('region', { name: 'Tool call create_ticket' });
    expect(await ticket.locator('.state').textContent()).toBe('rejected');
    expect(await ticket.locator('.denied').textContent()).toBe('Rejected: not before the warehouse confirms');
    expect(await tickets()).toHaveLength(before);
    expect(await approvalOf(run.id, 'rejected')).toMatchObject({ comment: 'not before the warehouse confirms' });
    await shot(tab, 'chat-web-rejected');
    await tab.close();
  });

  it('a decision the caller may not make: the card says so and the approval stays pending for an approver', async () => {
    const tab = await signIn(KEYS.user.key);
    await tab.getByLabel('Message').fill('Make good on late order 2024001');
    await tab.getByRole('button', { name: 'Send' }).click();
    // create_ticket and submit_refund are the requester's to approve; send_email needs an approver.
    const email = tab.getByRole('group', { name: 'Approve send_email?' });
    for (let i = 0; i < 3; i++) {
      const card = tab.locator('fieldset.approval').first();
      await card.waitFor({ timeout: 45_000 });
      const legend = (await card.locator('legend').textContent()) ?? '';
      if (legend === 'Approve send_email?') break;
      await card.getByRole('button', { name: 'Approve' }).click();
      await tab.getByRole('group', { name: legend }).waitFor({ state: 'detached', timeout: 45_000 });
    }
    await email.getByRole('button', { name: 'Approve' }).click();
    const note = email.getByRole('status');
    await note.waitFor({ timeout: 45_000 });
    expect(await note.textContent()).toMatch(/^Not applied: .+\. It stays pending for someone who may decide it\.$/);
    // Still asked: the page does not send the refused answer again by itself.
    expect(await email.getByRole('button', { name: 'Approve' }).isVisible()).toBe(true);
    const { approvals } = await fleet.client(KEYS.approver.key).approvals.list({ status: 'pending', tool: 'send_email' });
    expect(approvals.filter((a) => a.requestedBy === KEYS.user.userId)).toHaveLength(1);
    await tab.close();
  });

  it('served as `npm run chat-web` serves it: same origin, the chat door reached through the proxy', async () => {
    const proxied = await serve(await freePort(), {}, { REIN_API_URL: fleet.api });
    const tab = await signIn(KEYS.user.key, proxied);
    await tab.getByRole('button', { name: '查订单 A12345 状态，按政策说能否退' }).click();
    const run = await runOf(tab, KEYS.user.key);
    expect(await tab.locator('.message.assistant .text').last().textContent()).toBe(run.finalAnswer);
    expect(await tab.getByRole('region', { name: 'Tool call query_order' }).locator('.state').textContent()).toBe('done');
    await tab.close();
  });

  it('refuses a wrong key at sign-in, and no page error happened', async () => {
    const tab = await browser.newPage();
    await tab.goto(page);
    await tab.getByLabel('API key').fill('not-a-key');
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => tab.getByRole('alert').textContent()).toBe('That key is not valid.');
    await tab.close();
    // The 401 above is the browser's only console error: the key check's own request.
    expect(problems.filter((p) => !/401/.test(p))).toEqual([]);
  });
});
