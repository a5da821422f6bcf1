import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Approval, type AuditKeys, type AuditReceipt, approvalSchema } from '@rein/contract';
import { createArchivePool, migrateArchive, runKeys, tenantKeys, verifyReceipt } from '@rein/core/internal';
import { startTestPostgres, startTestRedis, type TestPostgres, type TestRedis } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { Redis } from 'ioredis';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';
import { hasSystemBinary } from '../support/system-binary.js';

const CHROMIUM = '/usr/bin/chromium';
const SUPERVISOR = { key: 'e2e-supervisor-key-sunqi', tenantId: 'e2e', userId: 'sunqi', roles: ['supervisor'] };
const OTHER_USER = { key: 'e2e-user-key-zhouba', tenantId: 'e2e', userId: 'zhouba', roles: ['user'] };
const ROLES = { user: KEYS.user, approver: KEYS.approver, supervisor: SUPERVISOR, admin: KEYS.admin };
const TRACE_UI = 'http://127.0.0.1:16686/trace/{traceId}';
const AUDIT_KEY = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
/** Set (to a folder, e.g. docs/console): each page's screenshot at 1280 px is written there. */
const SHOTS = process.env.CONSOLE_SCREENSHOTS;
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** A diff column's changed lines, whitespace collapsed. */
const changed = async (cells: Locator) => (await cells.allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// Needs Debian's chromium (.ci/run installs it); never downloads a browser.
describe.skipIf(!hasSystemBinary(CHROMIUM, 'chromium', 'the console browser suite'))('the console in a real browser', () => {
  let redis: TestRedis;
  let db: TestPostgres | null;
  let fleet: Fleet;
  let browser: Browser;
  let client: Redis;
  /** CSP violations and page errors of every page: none may happen. */
  const problems: string[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
    // Search reads the archive: a database of this file's own (skipped with a notice where there is none, failing under CI).
    db = await startTestPostgres('the console search');
    if (db) {
      const pool = createArchivePool(db.url);
      await migrateArchive(pool);
      await pool.end();
    }
    fleet = await startFleet({
      redisUrl: redis.url,
      workers: 1,
      env: {
        REIN_API_KEYS: JSON.stringify([...Object.values(KEYS), SUPERVISOR, OTHER_USER]),
        REIN_TRACE_URL_TEMPLATE: TRACE_UI,
        REIN_AUDIT_SIGNING_KEY: AUDIT_KEY,
        ...(db ? { REIN_ARCHIVE_URL: db.url } : {}),
      },
    });
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
    await fleet?.stop();
    client?.disconnect();
    await redis?.stop();
    await db?.stop();
  });

  async function signIn(key: string, width = 1280): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${fleet.approver}/console`);
    await page.getByLabel('API key').fill(key);
    await page.getByLabel('API key').press('Enter');
    await page.locator('#who').waitFor();
    return page;
  }

  /** axe-core in the page (evaluated, not a script tag: the CSP allows none): no serious or critical violation. */
  async function accessible(page: Page, what: string) {
    await page.evaluate(axeSource);
    // A string: the page's globals (axe, document) are not this file's.
    const violations = (await page.evaluate(
      'axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)) })))',
    )) as Array<{ id: string; impact: string; targets: string[] }>;
    expect(
      violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'),
      what,
    ).toEqual([]);
  }

  async function shot(page: Page, name: string) {
    if (!SHOTS) return;
    mkdirSync(join(root, SHOTS), { recursive: true });
    await page.screenshot({ path: join(root, SHOTS, `${name}.png`), fullPage: false });
  }

  const submit = async (input: string, key = KEYS.user.key) => {
    const res = await fleet.callApi('POST', '/v1/runs', key, { input });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body as { id: string };
  };
  const pendingApproval = async (runId: string) => {
    const run = await fleet.waitForRun(runId, (r) => r.status === 'pending_approval');
    return run.pendingApprovals[0] as { id: string; toolName: string };
  };

  it('signs in as each role and shows what the role allows, reachable by keyboard', async () => {
    for (const [role, key] of Object.entries(ROLES)) {
      const page = await signIn(key.key);
      expect(await page.locator('#who').textContent()).toContain(`Signed in as ${key.userId} (${role})`);
      const nav = page.getByRole('navigation', { name: 'Console' });
      expect(await nav.getByRole('link', { name: 'Usage' }).count(), role).toBe(role === 'user' ? 0 : 1);
      expect(await nav.getByRole('link', { name: 'Versions' }).count(), role).toBe(role === 'admin' ? 1 : 0);
      await page.close();
    }
    const bad = await browser.newPage();
    await bad.goto(`${fleet.approver}/console`);
    await accessible(bad, 'sign-in page');
    await shot(bad, 'sign-in');
    await bad.getByLabel('API key').fill('not-a-key');
    await bad.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => bad.getByRole('alert').textContent()).toContain('That key is not valid.');
    await bad.close();

    // Keyboard only: Tab to the Approvals link, Enter opens it.
    const page = await signIn(KEYS.approver.key);
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate('document.activeElement?.textContent')) === 'Approvals') break;
    }
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/approvals');
    await page.close();
  });

  it('a user sees their own runs only and cannot open another user’s run', async () => {
    const own = await submit('订单 A12345 的退货政策是什么？');
    const theirs = await submit('What is the return policy for order A12345?', OTHER_USER.key);
    await fleet.waitForRun(own.id, (r) => r.status === 'succeeded');
    const page = await signIn(KEYS.user.key);
    await page.locator(`#runs tr[data-run-id="${own.id}"]`).waitFor();
    expect(await page.locator(`#runs tr[data-run-id="${theirs.id}"]`).count()).toBe(0);
    // The user filter is for those who oversee the tenant.
    expect(await page.getByLabel('User', { exact: true }).count()).toBe(0);
    await page.goto(`${fleet.approver}/console#/runs/${theirs.id}`);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('No such run');
    expect(await page.locator('#steps').count()).toBe(0);

    // An approver sees both, and can filter by user.
    const approver = await signIn(KEYS.approver.key);
    await approver.locator(`#runs tr[data-run-id="${theirs.id}"]`).waitFor();
    await approver.getByLabel('User', { exact: true }).fill(OTHER_USER.userId);
    await approver.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => approver.locator(`#runs tr[data-run-id="${own.id}"]`).count()).toBe(0);
    expect(await approver.locator(`#runs tr[data-run-id="${theirs.id}"]`).count()).toBe(1);
    await page.close();
    await approver.close();
  });

  it('finds a finished run by text search and opens it', async (ctx) => {
    if (!db) return ctx.skip();
    const run = await submit('订单 2024001 包含哪些商品？');
    await fleet.waitForRun(run.id, (r) => r.status === 'succeeded');
    const page = await signIn(KEYS.approver.key);
    await page.getByRole('searchbox', { name: 'Search' }).fill('包含哪些商品');
    await page.getByRole('button', { name: 'Apply' }).click();
    // Searched in the archive, which the worker writes once the run is finished: shown once it is there.
    const row = page.locator(`#runs tr[data-run-id="${run.id}"]`);
    await expect
      .poll(
        async () => {
          if ((await row.count()) === 0) await page.getByRole('button', { name: 'Apply' }).click();
          return row.count();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(1);
    await accessible(page, 'runs page');
    await row.getByRole('link').click();
    await page.locator('#final-answer').waitFor();
    expect(await page.locator('#steps .call[data-tool="query_order"]').count()).toBeGreaterThan(0);
    await page.close();
  });

  it('opens a run and sees its steps arrive live; approves create_ticket with an edited priority, sees the diff and the run finish', async () => {
    const run = await submit('客户张三投诉订单 2024001 一直没发货，帮他处理一下');
    const approval = await pendingApproval(run.id);
    expect(approval.toolName).toBe('create_ticket');

    // The run page, opened while the run waits: what comes after the decision can only arrive live.
    const runPage = await signIn(KEYS.approver.key);
    await runPage.goto(`${fleet.approver}/console#/runs/${run.id}`);
    await runPage.locator('#steps .call[data-tool="query_order"]').first().waitFor();
    // The ticket's call waits for the decision: nothing has run yet.
    await runPage.locator('#steps .call[data-tool="create_ticket"] .outcome-awaiting_approval').waitFor();
    expect(await runPage.locator('#steps .call[data-tool="create_ticket"] .outcome-ok').count()).toBe(0);
    expect(await runPage.locator('h1 .badge').textContent()).toBe('pending approval');
    const traceLink = runPage.getByRole('link', { name: /^[0-9a-f]{32}$/ });
    expect(await traceLink.getAttribute('href')).toMatch(/^http:\/\/127\.0\.0\.1:16686\/trace\/[0-9a-f]{32}$/);
    await accessible(runPage, 'run page');
    await shot(runPage, 'run');

    const page = await signIn(KEYS.approver.key);
    await page.goto(`${fleet.approver}/console#/approvals`);
    const row = page.locator(`#pending tr[data-approval-id="${approval.id}"]`);
    await row.waitFor();
    await accessible(page, 'approvals inbox');
    await shot(page, 'approvals');
    await row.getByRole('link').click();
    // The rule: an approver or higher; the requester may approve only as proposed.
    await expect.poll(() => page.locator('#deciders').textContent()).toContain('approver or higher');
    expect(await page.locator('#deciders').textContent()).toContain(
      'zhangsan (who asked) may approve only as proposed (no edits), with the user role',
    );
    const priority = page.getByLabel(/^priority/);
    expect(await priority.inputValue()).toBe('high'); // the tool's schema normalised the model's 高
    await priority.selectOption('low');
    const diff = page.getByRole('table', { name: 'Your edit' });
    await expect.poll(() => changed(diff.locator('td.del'))).toEqual(['− "priority": "high",']);
    expect(await changed(diff.locator('td.ins'))).toEqual(['+ "priority": "low",']);
    await expect
      .poll(() => page.locator('#edit-note').textContent())
      .toContain('Judged again: risk high, needs approver; you may approve it.');
    await accessible(page, 'approval page');
    await shot(page, 'approval-edit');
    const before = new Set((await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001')).map((t) => t.ticketId));
    await page.getByRole('button', { name: 'Approve with edits' }).click();
    await expect.poll(() => page.locator('#decide-result').textContent()).toBe('Approved with edits.');
    // The decider keeps the decision's signed receipt: it downloads, and verifies with the fleet's published keys.
    const href = (await page.locator('#receipt-download').getAttribute('href')) ?? '';
    const receipt = JSON.parse(decodeURIComponent(href.slice(href.indexOf(',') + 1))) as AuditReceipt;
    expect(receipt.entry).toMatchObject({ action: 'approval.approved', actor: KEYS.approver.userId });
    expect(verifyReceipt(receipt, (await fleet.callApi('GET', '/v1/audit/keys', KEYS.approver.key)).body as AuditKeys)).toEqual({
      ok: true,
    });

    // Live: the open run page shows the ticket's step and the end, without a reload.
    await runPage.locator('#steps .call[data-tool="create_ticket"] .outcome-ok').waitFor({ timeout: 30_000 });
    await expect.poll(() => runPage.locator('h1 .badge').textContent(), { timeout: 30_000 }).toBe('succeeded');
    await runPage.locator('#final-answer').waitFor();
    const edit = runPage.getByRole('table', { name: "The approver's edit" });
    expect(await changed(edit.locator('td.ins'))).toEqual(['+ "priority": "low",']);
    expect(await runPage.locator('#steps .approval-outcome').first().textContent()).toContain('by lisi');
    const tickets = await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001');
    expect(tickets.filter((t) => !before.has(t.ticketId)).map((t) => t.priority)).toEqual(['low']);
    await runPage.locator('#steps .call[data-tool="create_ticket"] .outcome-ok').scrollIntoViewIfNeeded();
    await shot(runPage, 'run-timeline');
    await runPage.close();
    await page.close();
  });

  it('replays a finished run from its page, and shows the replay’s diff with its original', async () => {
    const run = await submit('订单 A12345 的退货政策是什么？');
    await fleet.waitForRun(run.id, (r) => r.status === 'succeeded');
    const page = await signIn(KEYS.approver.key);
    await page.goto(`${fleet.approver}/console#/runs/${run.id}`);
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    const heading = page.locator('.replay h3');
    await heading.waitFor();
    const replayId = (await heading.getByRole('link').textContent()) as string;
    // Just started, it is queued: its status, not a diff against steps it has not reached.
    expect(await heading.textContent()).toContain('is queued');
    expect(await page.locator('.replay table').count()).toBe(0);
    const replay = await fleet.waitForRun(replayId, (r) => r.status === 'succeeded');
    expect(replay.replayOf).toBe(run.id);
    await page.goto(`${fleet.approver}/console#/runs/${replayId}`);
    await page.getByRole('button', { name: 'Diff with the original' }).click();
    // The same scripted model and recorded tool results: the replay did what its original did.
    await expect.poll(() => heading.textContent()).toContain('identical');
    await accessible(page, 'replay diff');
    await page.close();
  });

  it('shows a plan step by step; editing one step approves the plan with that edit', async () => {
    const res = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, {
      input: 'Customer complains order 2024001 has not shipped, please handle it',
      agent: 'order-planner',
    });
    const run = res.body as { id: string };
    const approval = await pendingApproval(run.id);
    const page = await signIn(KEYS.approver.key);
    await page.goto(`${fleet.approver}/console#/approvals/${approval.id}`);
    await expect.poll(() => page.locator('#edit').textContent()).toContain('3. create_ticket');
    const step3 = page.getByRole('group', { name: 'Arguments of step 3' });
    await step3.getByLabel(/^suggestedAction/).fill('Edited in the console');
    await expect
      .poll(() => changed(page.getByRole('table', { name: 'Edit of step 3' }).locator('td.ins')))
      .toEqual(['+ "suggestedAction": "Edited in the console"']);
    await page.getByRole('button', { name: 'Approve with edits' }).click();
    await expect.poll(() => page.locator('#decide-result').textContent()).toBe('Approved with edits.');

    await fleet.waitForRun(run.id, (r) => r.status === 'succeeded');
    const trace = (await fleet.callApi('GET', `/v1/runs/${run.id}/trace`)).body;
    const ticket = trace.steps
      .flatMap((s: { toolCalls: Array<{ name: string }> }) => s.toolCalls)
      .find((c: { name: string }) => c.name === 'create_ticket');
    expect(ticket).toMatchObject({ outcome: 'ok', planStep: 3, arguments: { suggestedAction: 'Edited in the console' } });
    // The run page shows the plan with its steps done.
    await page.goto(`${fleet.approver}/console#/runs/${run.id}`);
    await expect.poll(() => page.locator('#plan').textContent()).toContain('done create_ticket');
    await page.close();
  });

  it('rejects with a reason; the reason is the decision’s comment', async () => {
    const run = await submit('Customer complains order 2024001 has not shipped, please handle it');
    const approval = await pendingApproval(run.id);
    const before = await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001');
    const page = await signIn(KEYS.approver.key);
    // Opened as approval webhooks link to it (`consoleUrl`, REIN_CONSOLE_URL).
    await page.goto(`${fleet.approver}/console?approval=${encodeURIComponent(approval.id)}`);
    const reject = page.getByRole('button', { name: 'Reject' });
    await reject.waitFor();
    expect(await reject.isDisabled()).toBe(true); // no reason yet
    await page.getByLabel(/^Reason/).fill('客户已撤回投诉 (withdrawn)');
    await reject.click();
    await expect.poll(() => page.locator('#decide-result').textContent()).toBe('Rejected.');
    const decided = await fleet.callApprover('GET', `/v1/approvals/${approval.id}`, KEYS.approver.key);
    expect(decided.body).toMatchObject({ status: 'rejected', decidedBy: 'lisi', comment: '客户已撤回投诉 (withdrawn)' });
    await fleet.waitForRun(run.id, (r) => r.status === 'succeeded' || r.status === 'failed');
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001')).toEqual(before); // nothing created
    await page.close();
  });

  it('refuses an approver an approval that the edit makes supervisor-only; a supervisor may decide it', async () => {
    const run = await submit('Refund the late-shipment compensation on order 2024001');
    const approval = await pendingApproval(run.id);
    expect(approval.toolName).toBe('submit_refund');
    const page = await signIn(KEYS.approver.key);
    await page.goto(`${fleet.approver}/console#/approvals/${approval.id}`);
    const amount = page.getByLabel(/^amount/);
    await amount.waitFor();
    await amount.fill('600');
    // Re-policed before deciding: critical, a supervisor's, refused to this approver.
    await expect.poll(() => page.locator('#refusal').textContent()).toContain('You cannot decide this');
    expect(await page.locator('#rejudged').textContent()).toContain('was high');
    expect(await page.locator('#deciders').textContent()).toContain('supervisor or higher');
    expect(await page.getByRole('button', { name: 'Approve with edits' }).isDisabled()).toBe(true);
    await shot(page, 'approval-refused');
    // The preview is the server's judgement: the tool's schema, the edit re-policed, and who may decide.
    const preview = await fleet.callApprover('POST', `/v1/approvals/${approval.id}/preview`, KEYS.approver.key, {
      arguments: { orderNo: '2024001', amount: 600, reason: 'late shipment compensation' },
    });
    expect(preview.body).toMatchObject({
      approval: { risk: 'critical', requiredRole: 'supervisor', status: 'pending' },
      mayDecide: false,
      parameters: { submit_refund: { properties: { amount: { type: 'number' } } } },
    });
    // The server agrees, whatever a page shows.
    const refused = await fleet.callApprover('POST', `/v1/approvals/${approval.id}/approve`, KEYS.approver.key, {
      arguments: { orderNo: '2024001', amount: 600, reason: 'late shipment compensation' },
    });
    expect(refused.status).toBe(403);

    const supervisor = await signIn(SUPERVISOR.key);
    await supervisor.goto(`${fleet.approver}/console#/approvals/${approval.id}`);
    await supervisor.getByLabel(/^amount/).fill('600');
    await expect.poll(() => supervisor.locator('#edit-note').textContent()).toContain('needs supervisor; you may approve it.');
    expect(await supervisor.locator('#refusal').count()).toBe(0);
    expect(await supervisor.getByRole('button', { name: 'Approve with edits' }).isDisabled()).toBe(false);
    await page.close();
    await supervisor.close();
  });

  it('shows a pending approval however many newer ones were decided, and pages in a long queue', async () => {
    // Seeded the way the store indexes approvals (per run, per tenant, per status), in a tenant of its own:
    // one pending, then 250 decided after it, more than one page of the newest-first list.
    const { tenantId } = KEYS.other;
    const t = tenantKeys(tenantId);
    const base = Date.now() - 3_600_000;
    const approval = (i: number, status: Approval['status']): Approval =>
      approvalSchema.parse({
        schemaVersion: 1,
        id: `seeded${i}.0.0`,
        runId: `seeded${i}`,
        step: 0,
        toolCallId: `call-${i}`,
        tenantId,
        requestedBy: 'someone',
        toolName: 'create_ticket',
        arguments: {},
        // Distinct calls: identical ones (same tool, same hash) would be one row of the inbox.
        argsHash: i.toString(16).padStart(64, '0'),
        policyVersion: 1,
        summary: i === 0 ? 'The old pending one' : `${status === 'pending' ? 'Pending' : 'Decided'} number ${i}`,
        risk: 'high',
        requiredRole: 'approver',
        status,
        createdAt: new Date(base + i * 1000).toISOString(),
        expiresAt: new Date(base + 86_400_000).toISOString(),
        ...(status === 'pending' ? {} : { decidedBy: KEYS.other.userId, decidedAt: new Date(base + i * 1000).toISOString() }),
      });
    const seed = async (approvals: Approval[]) => {
      const tx = client.multi();
      for (const a of approvals) {
        tx.hset(runKeys(a.runId).approvals, a.id, JSON.stringify(a));
        tx.zadd(t.approvals, Date.parse(a.createdAt), a.id);
        tx.zadd(t.approvalsByStatus(a.status), Date.parse(a.createdAt), a.id);
      }
      await tx.exec();
    };
    await seed([approval(0, 'pending'), ...Array.from({ length: 250 }, (_, i) => approval(i + 1, i % 2 ? 'approved' : 'rejected'))]);

    const page = await signIn(KEYS.other.key);
    await page.goto(`${fleet.approver}/console#/approvals`);
    await page.locator('#pending tr', { hasText: 'The old pending one' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#pending tr').count()).toBe(1);
    expect(await page.locator('#pending-more').count()).toBe(0);
    await expect.poll(() => page.locator('#recent').textContent()).toContain('Decided number 250');

    // More pending than one page: the rest come on request, the oldest one last.
    await seed(Array.from({ length: 150 }, (_, i) => approval(300 + i, 'pending')));
    await page.reload();
    await page.locator('#pending tr').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('#pending tr').count()).toBe(100);
    expect(await page.locator('#pending tr', { hasText: 'The old pending one' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Load more pending' }).click();
    await page.locator('#pending tr', { hasText: 'The old pending one' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#pending tr').count()).toBe(151);
    expect(await page.locator('#pending-more').count()).toBe(0);
    await page.close();
  });

  // Strings, as for axe: the page's globals (document, window) are not this file's.
  /** Pairs of the matched elements whose boxes overlap (by more than half a pixel each way), named by their text or label. */
  const overlaps = (page: Page, selector: string) =>
    page.evaluate(`(() => {
      const boxes = [...document.querySelectorAll(${JSON.stringify(selector)})].map((el) => ({
        name: (el.getAttribute('aria-label') || el.textContent || el.tagName).trim().slice(0, 30),
        r: el.getBoundingClientRect(),
      }));
      const hits = [];
      for (const [i, a] of boxes.entries())
        for (const b of boxes.slice(i + 1)) {
          const x = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
          const y = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
          if (x > 0.5 && y > 0.5) hits.push(a.name + ' × ' + b.name);
        }
      return hits;
    })()`) as Promise<string[]>;
  /** Elements (by selector) that reach past the viewport's right or left edge: cut off. */
  const cutOff = (page: Page, selector: string) =>
    page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})]
      .filter((el) => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && (r.left < -0.5 || r.right > window.innerWidth + 0.5);
      })
      .map((el) => el.getAttribute('data-label') ?? el.tagName)`) as Promise<string[]>;
  const noPageOverflow = async (page: Page, what: string) =>
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'), what).toBe(true);

  it('lays out at 1280 px and on a phone (390 px): filters clear of their buttons, no table cut off, no sideways scroll', async () => {
    const run = await submit('Customer complains order 2024001 has not shipped, please handle it');
    const approval = await pendingApproval(run.id);
    for (const width of [1280, 390]) {
      const page = await signIn(KEYS.approver.key, width);
      // Runs: every label, field and button of the filter form in a box of its own, inside the form.
      await page.locator('#runs tr').first().waitFor();
      expect(await overlaps(page, 'form.filters > *'), `runs filters at ${width}`).toEqual([]);
      expect(await overlaps(page, 'form.filters input, form.filters select, form.filters button'), `runs fields at ${width}`).toEqual([]);
      expect(await cutOff(page, 'form.filters input, form.filters select, form.filters button'), `runs filters at ${width}`).toEqual([]);
      expect(await cutOff(page, '#runs td'), `runs table at ${width}`).toEqual([]);
      await noPageOverflow(page, `runs at ${width}`);
      await shot(page, width === 390 ? 'phone-runs' : 'runs-1280');

      await page.goto(`${fleet.approver}/console#/approvals`);
      const row = page.locator(`#pending tr[data-approval-id="${approval.id}"]`);
      await row.waitFor();
      expect(await overlaps(page, 'form.filters > *'), `inbox filters at ${width}`).toEqual([]);
      expect(await overlaps(page, '.bulk > *'), `bulk bar at ${width}`).toEqual([]);
      // Every cell of an approval is on screen: its risk, what, who asked, when it expires.
      expect(await cutOff(page, `#pending tr[data-approval-id="${approval.id}"] td`), `approvals at ${width}`).toEqual([]);
      expect(await row.getByRole('link').isVisible()).toBe(true);
      await noPageOverflow(page, `approvals at ${width}`);
      await accessible(page, `approvals at ${width}`);
      await shot(page, width === 390 ? 'phone-approvals' : 'approvals-1280');

      await page.goto(`${fleet.approver}/console#/usage`);
      await page.locator('#approval-load-summary').waitFor();
      await noPageOverflow(page, `usage at ${width}`);
      await page.close();
    }
    expect(problems).toEqual([]);
  });

  it('lists schedules with their next run in their own time zone, shows history and next firings, and enables and disables them', async () => {
    const daily = await fleet.callApi('POST', '/v1/schedules', KEYS.user.key, {
      input: '订单 A12345 的退货政策是什么？',
      cron: '30 2 * * *',
      timezone: 'Asia/Shanghai',
    });
    expect(daily.status, JSON.stringify(daily.body)).toBe(201);
    // Every 2 s: it fires while the test watches (as its owner, zhangsan), then is disabled from the console.
    const often = await fleet.callApi('POST', '/v1/schedules', KEYS.user.key, { input: '支持 7 天无理由退货吗？', cron: '*/2 * * * * *' });
    expect(often.status, JSON.stringify(often.body)).toBe(201);

    const page = await signIn(KEYS.user.key);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Schedules' }).click();
    const row = page.locator(`#schedules tr[data-schedule-id="${daily.body.id}"]`);
    await row.waitFor();
    // 02:30 in Shanghai, written in Shanghai's time (UTC+8), not the browser's or UTC.
    expect(await row.locator('td[data-label="Next run"]').textContent()).toMatch(/ 02:30:00 GMT\+8$/);
    await accessible(page, 'schedules page');
    await shot(page, 'schedules');

    await row.getByRole('link').click();
    const next = page.locator('#next-firings-list li');
    await next.first().waitFor();
    expect(await next.count()).toBe(5);
    for (const text of await next.allTextContents()) expect(text).toMatch(/ 02:30:00 GMT\+8 \(.* 18:30:00 UTC\)$/);

    await page.goto(`${fleet.approver}/console#/schedules/${often.body.id}`);
    // Its firings arrive: a started run, linked (read again until the first one is recorded).
    const started = page.locator('#firings tr[data-outcome="started"] a');
    await expect
      .poll(
        async () => {
          if ((await started.count()) === 0) await page.reload();
          return started.count();
        },
        { timeout: 30_000, interval: 1000 },
      )
      .toBeGreaterThan(0);
    await accessible(page, 'schedule page');
    await shot(page, 'schedule');
    await page.getByRole('button', { name: /^Disable schedule/ }).click();
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('disabled');
    expect(await page.locator('#next-firings').textContent()).toContain('None: it is disabled.');
    expect((await fleet.callApi('GET', `/v1/schedules/${often.body.id}`, KEYS.user.key)).body).toMatchObject({
      enabled: false,
      nextRunAt: null,
    });
    await page.getByRole('button', { name: /^Enable schedule/ }).click();
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('enabled');
    await page.getByRole('button', { name: /^Disable schedule/ }).click();
    await expect.poll(() => page.locator('h1 .badge').textContent()).toBe('disabled');

    // Another user of the tenant sees neither, nor opens one by its address.
    const other = await signIn(OTHER_USER.key);
    await other.goto(`${fleet.approver}/console#/schedules`);
    await other.getByRole('heading', { name: 'Schedules' }).waitFor();
    await expect.poll(() => other.locator('#schedules tr').count()).toBe(0);
    await other.goto(`${fleet.approver}/console#/schedules/${daily.body.id}`);
    await expect.poll(() => other.getByRole('alert').textContent()).toContain('schedule');
    await fleet.callApi('DELETE', `/v1/schedules/${daily.body.id}`, KEYS.user.key);
    await fleet.callApi('DELETE', `/v1/schedules/${often.body.id}`, KEYS.user.key);
    await other.close();
    await page.close();
    expect(problems).toEqual([]);
  });

  it('shows usage and the deploy view, accessible, and the runs page fits a phone', async () => {
    const approver = await signIn(KEYS.approver.key);
    await approver.goto(`${fleet.approver}/console#/usage`);
    await approver.locator('#usage-source').waitFor();
    // The approval load: the tenant's decisions so far (this suite has decided some as lisi).
    await expect.poll(() => approver.locator('#approval-load-summary').textContent()).toMatch(/\d+ asked · [1-9]\d* decided/);
    expect(await approver.locator('#deciders tr', { hasText: 'lisi' }).count()).toBe(1);
    expect(await approver.locator('#time-to-decision tr', { hasText: 'create_ticket' }).count()).toBe(1);
    expect(await approver.locator('#usage-source').textContent()).toContain(db ? 'From the run archive' : 'No run archive');
    await expect.poll(() => approver.getByRole('img', { name: /^Runs per agent|^Tokens per agent/ }).count()).toBeGreaterThan(0);
    expect(await approver.getByRole('img', { name: /^Tokens per agent/ }).getAttribute('aria-label')).toContain('order-assistant');
    await accessible(approver, 'usage page');
    await shot(approver, 'usage');
    await approver.goto(`${fleet.approver}/console#/runs`);
    await approver.locator('#runs tr').first().waitFor();
    await accessible(approver, 'runs page');
    await shot(approver, 'runs');
    await approver.close();

    const admin = await signIn(KEYS.admin.key);
    await admin.goto(`${fleet.approver}/console#/versions`);
    await admin.locator('#current-version').waitFor();
    expect(await admin.locator('tbody tr').count()).toBeGreaterThan(0);
    await accessible(admin, 'versions page');
    await shot(admin, 'versions');
    await admin.close();

    const phone = await signIn(KEYS.approver.key, 390);
    await phone.locator('#runs tr').first().waitFor();
    expect(await phone.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    await phone.close();
    expect(problems).toEqual([]);
  });
});
