import { runKeys, tenantKeys } from '@rein/core/internal';
import { type Approval, approvalSchema } from '@rein/core/schemas';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { Redis } from 'ioredis';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';
import { hasSystemBinary } from '../support/system-binary.js';

const CHROMIUM = '/usr/bin/chromium';

// Needs Debian's chromium (.ci/run installs it); never downloads a browser.
describe.skipIf(!hasSystemBinary(CHROMIUM, 'chromium', 'the approver console browser suite'))('approver console in a real browser', () => {
  let redis: TestRedis;
  let fleet: Fleet;
  let browser: Browser;
  let client: Redis;
  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
    fleet = await startFleet({ redisUrl: redis.url, workers: 1 });
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
  });

  it('shows a new approval live; approving it by clicking lets the run succeed', async () => {
    const page = await browser.newPage();
    await page.goto(`${fleet.approver}/console`);
    await page.getByLabel('Approver API key').fill(KEYS.approver.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#who').textContent()).toContain('Signed in as lisi');
    await expect.poll(() => page.locator('#pending-empty').isVisible()).toBe(true);

    // Submitted after sign-in: the row must arrive through the live feed, not a page load.
    const { body: run } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, {
      input: '客户张三投诉订单 2024001 一直没发货，帮他处理一下',
    });
    const row = page.locator('#pending tr', { hasText: 'ticket on order 2024001' });
    await row.waitFor({ timeout: 30_000 });
    await expect.poll(() => row.locator('.risk').textContent()).toBe('high');
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId)).toEqual([]); // nothing before approval

    await row.getByRole('button', { name: /^Open/ }).click();
    await expect.poll(() => page.locator('#detail-args').textContent()).toContain('"orderNo": "2024001"');
    await expect.poll(() => page.locator('#detail-trace').textContent()).toContain('query_order');
    await page.getByLabel('Comment (required to reject)').fill('compensation per policy');
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('#decide-result').textContent()).toContain('Approved');

    const done = await fleet.waitForRun(run.id, (r) => r.status === 'succeeded');
    const tickets = await new DemoStore(client).tickets(KEYS.user.tenantId);
    expect(tickets).toHaveLength(1);
    expect(done.finalAnswer).toContain(tickets[0]?.ticketId);
    await expect.poll(() => page.locator('#recent').textContent()).toContain('approved');
    await page.close();
  });
  it('shows a plan step by step; editing one step approves the plan with that edit', async () => {
    const page = await browser.newPage();
    await page.goto(`${fleet.approver}/console`);
    await page.getByLabel('Approver API key').fill(KEYS.approver.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#who').textContent()).toContain('Signed in as lisi');

    const { body: run } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, {
      input: 'Customer complains order 2024001 has not shipped, please handle it',
      agent: 'order-planner',
    });
    const row = page.locator('#pending tr', { hasText: 'Plan of 3 steps' });
    await row.waitFor({ timeout: 30_000 });
    await row.getByRole('button', { name: /^Open/ }).click();
    await expect.poll(() => page.locator('#detail-plan').textContent()).toContain('3. create_ticket');
    const step3 = page.getByLabel('Arguments of step 3');
    const edited = JSON.parse(await step3.inputValue());
    await step3.fill(JSON.stringify({ ...edited, suggestedAction: 'Edited in the console' }));
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('#decide-result').textContent()).toContain('Approved');

    await fleet.waitForRun(run.id, (r) => r.status === 'succeeded');
    const trace = (await fleet.callApi('GET', `/v1/runs/${run.id}/trace`)).body;
    const ticket = trace.steps
      .flatMap((s: { toolCalls: Array<{ name: string }> }) => s.toolCalls)
      .find((c: { name: string }) => c.name === 'create_ticket');
    expect(ticket).toMatchObject({ outcome: 'ok', planStep: 3, arguments: { suggestedAction: 'Edited in the console' } });
    await page.close();
  });

  it('shows a pending approval however many newer ones were decided', async () => {
    // Seeded the way the store indexes approvals (per run, per tenant, per status): one pending,
    // then 250 decided after it, more than one page of the newest-first list.
    const { tenantId } = KEYS.user;
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
        requestedBy: KEYS.user.userId,
        toolName: 'create_ticket',
        arguments: {},
        argsHash: '0'.repeat(64),
        policyVersion: 1,
        summary: i === 0 ? 'The old pending one' : `${status === 'pending' ? 'Pending' : 'Decided'} number ${i}`,
        risk: 'high',
        requiredRole: 'approver',
        status,
        createdAt: new Date(base + i * 1000).toISOString(),
        expiresAt: new Date(base + 86_400_000).toISOString(),
        ...(status === 'pending' ? {} : { decidedBy: KEYS.approver.userId, decidedAt: new Date(base + i * 1000).toISOString() }),
      });
    const seeded = [approval(0, 'pending'), ...Array.from({ length: 250 }, (_, i) => approval(i + 1, i % 2 ? 'approved' : 'rejected'))];
    const tx = client.multi();
    for (const a of seeded) {
      tx.hset(runKeys(a.runId).approvals, a.id, JSON.stringify(a));
      tx.zadd(t.approvals, Date.parse(a.createdAt), a.id);
      tx.zadd(t.approvalsByStatus(a.status), Date.parse(a.createdAt), a.id);
    }
    await tx.exec();

    const page = await browser.newPage();
    await page.goto(`${fleet.approver}/console`);
    await page.getByLabel('Approver API key').fill(KEYS.approver.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#who').textContent()).toContain('Signed in as lisi');
    await page.locator('#pending tr', { hasText: 'The old pending one' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#pending tr').count()).toBe(1);
    expect(await page.locator('#pending-more').isVisible()).toBe(false);
    await expect.poll(() => page.locator('#recent').textContent()).toContain('Decided number 250');

    // More pending than one page: the rest come on request, the oldest one last.
    const more = client.multi();
    for (const a of Array.from({ length: 150 }, (_, i) => approval(300 + i, 'pending'))) {
      more.hset(runKeys(a.runId).approvals, a.id, JSON.stringify(a));
      more.zadd(t.approvals, Date.parse(a.createdAt), a.id);
      more.zadd(t.approvalsByStatus(a.status), Date.parse(a.createdAt), a.id);
    }
    await more.exec();
    await page.reload();
    await page.locator('#pending tr').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('#pending tr').count()).toBe(100);
    expect(await page.locator('#pending tr', { hasText: 'The old pending one' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Load more pending' }).click();
    await page.locator('#pending tr', { hasText: 'The old pending one' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#pending tr').count()).toBe(151);
    expect(await page.locator('#pending-more').isVisible()).toBe(false);
    await page.close();
  });
});
