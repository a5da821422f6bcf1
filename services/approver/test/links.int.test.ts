import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { createFakeModel, freePort, startTestRedis, type TestRedis, toolCall } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../../../packages/core/test/harness.js';
import { createApproverApp } from '../src/app.js';

// Signed one-click links (issue 31): decided once by POST, never by GET, refused after use,
// after expiry, for the wrong user and for a user lacking the role; forged ones refused.
const ALICE = { key: 'links-alice-key-0001', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const BOB = { key: 'links-bob-key-000001', tenantId: 'acme', userId: 'bob', roles: ['approver'] };
const DAVE = { key: 'links-dave-key-00001', tenantId: 'acme', userId: 'dave', roles: ['approver'] };
const ANN = { key: 'links-ann-key-000001', tenantId: 'acme', userId: 'ann', roles: ['admin'] };
const GUS = { key: 'links-gus-key-000001', tenantId: 'globex', userId: 'gus', roles: ['admin'] };

let redis: TestRedis;
let rt: Runtime;
let app: FastifyInstance;
let base: string;
const harnesses: Harness[] = [];

const ENV = { REIN_API_KEYS: JSON.stringify([ALICE, BOB, DAVE, ANN, GUS]), LOG_LEVEL: 'silent' };

beforeAll(async () => {
  redis = await startTestRedis();
  // Links point at the configured public URL, here the one this approver listens on.
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  rt = await createRuntime(
    optionsFromEnv({ ...ENV, REDIS_URL: redis.url, REIN_CONSOLE_URL: base }),
    'approver-links-test',
    'producer',
    orderApp,
  );
  app = createApproverApp(rt);
  await app.listen({ port, host: '127.0.0.1' });
});
afterAll(async () => {
  await app.close();
  await rt.close();
  for (const h of harnesses) await h.close();
  await redis.stop();
});

/** A run of Alice's parked on a refund of `amount` (the step engine over the approver's Redis). */
async function parkedRefund(amount: number, approvalTtlMs = 60_000) {
  const model = createFakeModel([
    { toolCalls: [toolCall('r1', 'submit_refund', { orderNo: '2024001', amount, reason: '<b>late</b> & "lost"' })] },
    { content: 'done' },
  ]);
  const t = createHarness(redis.url, model, { approvalTtlMs });
  harnesses.push(t);
  const id = await t.submit('refund please', { tenantId: 'acme', userId: 'alice', roles: ['user'] });
  await t.drain();
  const approvalId = (await t.store.require(id)).pendingApprovals[0] ?? '';
  return { t, id, approvalId };
}

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const mint = async (key: string, approvalId: string, body: { userId?: string } = {}) =>
  call(key, 'POST', `/v1/approvals/${approvalId}/links`, body);
/** What a browser's form sends. */
const submitForm = (url: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });

describe('one-click links', () => {
  it('GET shows a confirmation page and decides nothing; POST decides once; the pair is spent together', async () => {
    const { t, id, approvalId } = await parkedRefund(100);
    const res = await mint(BOB.key, approvalId);
    expect(res.status).toBe(200);
    const links = (await res.json()) as { approveUrl: string; rejectUrl: string; expiresAt: string };
    expect(links.approveUrl.startsWith(`${base}/links?token=`)).toBe(true);

    // A mail scanner fetches the link, twice: nothing is decided, and the page escapes what the model wrote.
    for (const _ of [1, 2]) {
      const page = await fetch(links.approveUrl);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
      const html = await page.text();
      expect(html).toContain('&lt;b&gt;late&lt;/b&gt; &amp; &quot;lost&quot;');
      expect(html).not.toContain('<b>late</b>');
      expect(html).toContain('<form method="post"');
    }
    expect((await rt.approvals.get({ tenantId: 'acme', userId: 'ann', roles: ['admin'] }, approvalId)).status).toBe('pending');

    const used = await submitForm(links.approveUrl);
    expect(used.status).toBe(200);
    expect(await used.text()).toContain('Done: approved');
    const decided = await rt.approvals.get({ tenantId: 'acme', userId: 'ann', roles: ['admin'] }, approvalId);
    expect(decided).toMatchObject({ status: 'approved', decidedBy: 'bob' });

    // Replayed, or its reject twin: refused with a page, nothing changes.
    const replay = await submitForm(links.approveUrl);
    expect(replay.status).toBe(409);
    expect(await replay.text()).toContain('cannot be used');
    expect((await submitForm(links.rejectUrl)).status).toBe(409);
    // The decision enqueued the resume on the fleet's queue; this test's engine takes it from there.
    await t.enqueue('resume', { runId: id, step: 0 });
    await t.drain();
    expect((await t.demo.refunds('acme')).map((r) => r.amount)).toEqual([100]);
  });

  it('refuses the wrong user, a user lacking the role, a non-admin minting for someone else, and another tenant', async () => {
    // Over 500 a refund is critical: a supervisor (or higher) other than the requester decides.
    const { approvalId } = await parkedRefund(800);
    expect((await mint(ANN.key, approvalId, { userId: 'alice' })).status).toBe(403);
    expect((await mint(ALICE.key, approvalId)).status).toBe(403);
    // Bob is an approver: he lacks the role, so he gets no link.
    expect((await mint(BOB.key, approvalId)).status).toBe(403);
    expect((await mint(ANN.key, approvalId, { userId: 'bob' })).status).toBe(403);
    // Only an admin mints for someone else.
    expect((await mint(BOB.key, approvalId, { userId: 'ann' })).status).toBe(403);
    expect((await mint(ANN.key, approvalId, { userId: 'nobody' })).status).toBe(404);
    // Another tenant's admin does not even see the approval.
    expect((await mint(GUS.key, approvalId)).status).toBe(404);
    expect((await mint(GUS.key, approvalId, { userId: 'ann' })).status).toBe(404);

    const forAnn = (await (await mint(ANN.key, approvalId)).json()) as { approveUrl: string; rejectUrl: string };
    // Forged: a changed signature, a payload naming another user with the old signature, garbage, a huge token.
    const [head, sig] = (forAnn.approveUrl.split('?token=')[1] ?? '').split('.') as [string, string];
    const payload = JSON.parse(Buffer.from(head, 'base64url').toString());
    const asBob = Buffer.from(JSON.stringify({ ...payload, u: 'bob' })).toString('base64url');
    for (const token of [`${head}.${sig.slice(0, -2)}AA`, `${asBob}.${sig}`, 'x', `${'a'.repeat(5000)}.b`]) {
      expect((await submitForm(`${base}/links?token=${token}`)).status).toBe(403);
      expect((await fetch(`${base}/links?token=${token}`)).status).toBe(403);
    }
    const rejected = await submitForm(forAnn.rejectUrl);
    expect(rejected.status).toBe(200);
    expect(await rejected.text()).toContain('Done: rejected');
  });

  it('refuses a link after its approval expired, and one whose arguments were edited since', async () => {
    const { approvalId } = await parkedRefund(102, 1500);
    const links = (await (await mint(BOB.key, approvalId)).json()) as { approveUrl: string; expiresAt: string };
    expect(Date.parse(links.expiresAt)).toBeLessThanOrEqual(Date.now() + 1500);
    await new Promise((r) => setTimeout(r, 1600));
    expect((await fetch(links.approveUrl)).status).toBe(410);
    expect((await submitForm(links.approveUrl)).status).toBe(410);

    const second = await parkedRefund(103);
    const forDave = (await (await mint(DAVE.key, second.approvalId)).json()) as { approveUrl: string };
    // Bob edits the amount meanwhile (and so decides it): Dave's link was for other arguments.
    await call(BOB.key, 'POST', `/v1/approvals/${second.approvalId}/approve`, {
      arguments: { orderNo: '2024001', amount: 50, reason: 'late' },
    });
    expect((await submitForm(forDave.approveUrl)).status).toBe(409);
  });
});

describe('where links point', () => {
  it("builds them from the configured public URL, never from the request's Host", async () => {
    const { approvalId } = await parkedRefund(104);
    for (const headers of [
      { host: 'evil.example' },
      { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: `/v1/approvals/${approvalId}/links`,
        headers: { ...headers, authorization: `Bearer ${BOB.key}`, 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(res.statusCode).toBe(200);
      const links = res.json() as { approveUrl: string; rejectUrl: string };
      expect(links.approveUrl.startsWith(`${base}/links?token=`)).toBe(true);
      expect(links.rejectUrl.startsWith(`${base}/links?token=`)).toBe(true);
    }
  });

  it('mints none without a configured public URL (409 console_url_unset)', async () => {
    const { approvalId } = await parkedRefund(105);
    const bare = await createRuntime(optionsFromEnv({ ...ENV, REDIS_URL: redis.url }), 'approver-links-bare', 'producer', orderApp);
    const bareApp = createApproverApp(bare);
    try {
      const res = await bareApp.inject({
        method: 'POST',
        url: `/v1/approvals/${approvalId}/links`,
        headers: { host: 'evil.example', authorization: `Bearer ${BOB.key}`, 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ error: { code: 'console_url_unset' } });
    } finally {
      await bareApp.close();
      await bare.close();
    }
  });
});

describe('triage at scale', () => {
  it('filters the list, and decides a batch id by id with each one’s own rights', async () => {
    const high = await parkedRefund(120);
    const critical = await parkedRefund(900);
    const list = async (q: string) =>
      (
        (await (await call(BOB.key, 'GET', `/v1/approvals?status=pending&${q}`)).json()) as { approvals: Array<{ id: string }> }
      ).approvals.map((a) => a.id);
    expect(await list('risk=critical')).toContain(critical.approvalId);
    expect(await list('risk=critical')).not.toContain(high.approvalId);
    expect(await list('tool=submit_refund&requestedBy=alice')).toEqual(expect.arrayContaining([high.approvalId, critical.approvalId]));
    expect(await list('requestedBy=bob')).toEqual([]);
    expect(await list('agent=no-such-agent')).toEqual([]);
    expect(await list(`agent=${(await high.t.store.require(high.id)).agent}`)).toContain(high.approvalId);
    expect(await list('createdBefore=2000-01-01T00:00:00Z')).toEqual([]);

    const globexLike = `${high.id.slice(0, -1)}0.0.0`;
    const res = await call(BOB.key, 'POST', '/v1/approvals/decide', {
      ids: [high.approvalId, critical.approvalId, globexLike],
      verdict: 'approve',
      comment: 'batch',
    });
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as {
      results: Array<{ id: string; ok: boolean; approval?: { status: string }; error?: { code: string } }>;
    };
    expect(results.map((r) => [r.id, r.ok, r.approval?.status ?? r.error?.code])).toEqual([
      [high.approvalId, true, 'approved'],
      [critical.approvalId, false, 'forbidden'],
      [globexLike, false, 'not_found'],
    ]);
    // Another tenant's admin deciding our ids: not found, each.
    const foreign = (await (
      await call(GUS.key, 'POST', '/v1/approvals/decide', { ids: [critical.approvalId], verdict: 'reject', comment: 'x' })
    ).json()) as {
      results: Array<{ error?: { code: string } }>;
    };
    expect(foreign.results[0]?.error?.code).toBe('not_found');
    // Malformed and oversized bodies are refused at the boundary.
    for (const body of [
      { ids: [], verdict: 'approve' },
      { ids: Array.from({ length: 101 }, (_, i) => `x${i}`), verdict: 'approve' },
      { ids: ['a', 'a'], verdict: 'approve' },
      { ids: ['a'], verdict: 'reject' },
      { ids: ['a'], verdict: 'maybe' },
      { ids: ['a'], verdict: 'approve', extra: 1 },
    ])
      expect((await call(BOB.key, 'POST', '/v1/approvals/decide', body)).status).toBe(400);
  });
});
