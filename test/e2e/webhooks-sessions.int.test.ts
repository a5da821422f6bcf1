import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, type WebhookEventType } from '@rein/client';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/** A receiving endpoint: the first delivery to `/e2e` gets a 500 on purpose, everything else a 204. */
function startReceiver() {
  const got: Received[] = [];
  let failedOnce = false;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const fail = req.url === '/e2e' && !failedOnce;
      failedOnce ||= fail;
      const answered = fail ? 500 : 204;
      got.push({ path: req.url ?? '', headers: req.headers, body, answered });
      res.writeHead(answered).end();
    });
  });
  return new Promise<{ url: string; got: Received[]; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, close: () => server.close() }),
    ),
  );
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, fleet: Fleet, timeoutMs = 45_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} never happened\n${fleet.logs.slice(-30).join('\n')}`);
}

let redis: TestRedis;
let fleet: Fleet;
beforeAll(async () => {
  redis = await startTestRedis();
  fleet = await startFleet({
    redisUrl: redis.url,
    // The receiver listens on loopback; retries come after 300 ms instead of 5 s.
    env: { REIN_WEBHOOK_ALLOW_PRIVATE: 'true', REIN_WEBHOOK_RETRY_BASE_MS: '300' },
  });
});
afterAll(async () => {
  await fleet?.stop();
  await redis?.stop();
});

describe('webhooks through the fleet', () => {
  it('delivers signed events of its own tenant only, retrying a failed delivery under the same webhook-id', async () => {
    const receiver = await startReceiver();
    try {
      const all: WebhookEventType[] = ['run.finished', 'approval.requested', 'approval.decided', 'effect.uncertain'];
      const admin = fleet.client(KEYS.admin.key);
      const other = fleet.client(KEYS.other.key);
      await expect(fleet.client().webhooks.create({ url: `${receiver.url}/e2e`, events: all })).rejects.toMatchObject({ status: 403 });
      await expect(admin.webhooks.create({ url: 'ftp://example.com/x', events: all })).rejects.toMatchObject({ status: 400 });
      const mine = await admin.webhooks.create({ url: `${receiver.url}/e2e`, events: all });
      expect(mine).toMatchObject({ url: `${receiver.url}/e2e`, events: all, secret: expect.stringMatching(/^whsec_/) });
      const theirs = await other.webhooks.create({ url: `${receiver.url}/other`, events: ['run.finished'] });

      // Tenant e2e: a run that parks for approval, is approved, and succeeds.
      const run = (await fleet.client().runs.create({ input: LATE_ORDER })).id;
      const parked = await fleet.waitForRun(run, (r) => r.status === 'pending_approval');
      const approvalId = parked.pendingApprovals[0]?.id ?? '';
      expect((await fleet.client(KEYS.approver.key).approvals.approve(approvalId)).status).toBe('approved');
      await fleet.waitForRun(run, (r) => r.status === 'succeeded');
      // Tenant elsewhere: a run of its own.
      const otherRun = (await other.runs.create({ input: 'hello' })).id;

      const bodies = (path: string) => receiver.got.filter((g) => g.path === path);
      const finishedAt = (path: string, runId: string) =>
        bodies(path).find((g) => g.answered === 204 && g.body.includes(runId) && g.body.includes('"run.finished"'));
      await until('run.finished delivered to tenant e2e', () => finishedAt('/e2e', run), fleet);
      await until('run.finished delivered to tenant elsewhere', () => finishedAt('/other', otherRun), fleet);

      // Every delivery verifies with its webhook's secret (Standard Webhooks), and only with it.
      for (const g of receiver.got) {
        const secret = g.path === '/e2e' ? mine.secret : theirs.secret;
        expect(verifyWebhook(secret, g.body, g.headers as Record<string, string>)).toMatchObject({ type: expect.any(String) });
        const wrong = g.path === '/e2e' ? theirs.secret : mine.secret;
        expect(() => verifyWebhook(wrong, g.body, g.headers as Record<string, string>)).toThrow();
      }
      // Tenant separation: neither endpoint hears of the other tenant's runs.
      expect(bodies('/e2e').some((g) => g.body.includes(otherRun))).toBe(false);
      expect(bodies('/other').some((g) => g.body.includes(run))).toBe(false);

      const e2e = bodies('/e2e').map((g) => ({ ...g, payload: JSON.parse(g.body) as { type: string; data: Record<string, unknown> } }));
      expect(new Set(e2e.map((g) => g.payload.type))).toEqual(new Set(['approval.requested', 'approval.decided', 'run.finished']));
      expect(e2e.find((g) => g.payload.type === 'run.finished')?.payload.data).toMatchObject({ runId: run, status: 'succeeded' });
      // The delivery that failed on purpose came again with the same webhook-id, and succeeded.
      const failed = e2e.find((g) => g.answered === 500);
      await until(
        'the retry of the failed delivery',
        () => bodies('/e2e').find((g) => g.answered === 204 && g.headers['webhook-id'] === failed?.headers['webhook-id']),
        fleet,
      );
      const retried = bodies('/e2e').filter((g) => g.headers['webhook-id'] === failed?.headers['webhook-id']);
      expect(retried.map((g) => g.answered)).toEqual([500, 204]);
      expect(retried[0]?.body).toBe(retried[1]?.body);

      // The delivery log, readable by the tenant admin only.
      const { attempts } = await admin.webhooks.deliveries(mine.id);
      const ofFailed = attempts.filter((a) => a.messageId === failed?.headers['webhook-id']).reverse();
      expect(ofFailed.map((a) => [a.attempt, a.outcome, a.status])).toEqual([
        [1, 'failed', 500],
        [2, 'delivered', 204],
      ]);
      await expect(other.webhooks.deliveries(mine.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });
      await expect(fleet.client(KEYS.approver.key).webhooks.deliveries(mine.id)).rejects.toMatchObject({ status: 403, code: 'forbidden' });

      const listed = await admin.webhooks.list();
      expect(listed.map((w) => w.id)).toEqual([mine.id]);
      expect(JSON.stringify(listed)).not.toContain('whsec_');
      await admin.webhooks.delete(mine.id);
      expect(await admin.webhooks.list()).toEqual([]);
    } finally {
      receiver.close();
    }
  });
});

describe('sessions through the fleet', () => {
  it("starts a session's second run with the first one's conversation; one active run per session", async () => {
    const user = fleet.client(KEYS.user.key);
    const first = await user.runs.create({ input: 'What is your return policy?', sessionId: 'chat-1' });
    expect(first.status).toBe('queued');
    expect((await user.runs.wait(first.id)).status).toBe('succeeded');

    const second = await user.runs.create({ input: 'What did I ask before?', sessionId: 'chat-1' });
    const answered = await user.runs.wait(second.id);
    expect(answered.status).toBe('succeeded');
    expect(answered.finalAnswer).toContain('Earlier you asked: "What is your return policy?"');

    // A run that parks keeps the session busy.
    const third = await user.runs.create({ input: LATE_ORDER, sessionId: 'chat-1' });
    expect((await user.runs.wait(third.id)).status).toBe('pending_approval');
    await expect(user.runs.create({ input: 'anything else?', sessionId: 'chat-1' })).rejects.toMatchObject({
      status: 409,
      code: 'session_busy',
    });

    const session = await user.sessions.get('chat-1');
    expect(session.runs.map((r) => r.id)).toEqual([first.id, second.id, third.id]);
    // Sessions are per user.
    await expect(fleet.client(KEYS.approver.key).sessions.get('chat-1')).rejects.toMatchObject({ status: 404, code: 'not_found' });

    // Listing through the indexes: the two finished runs of the session, newest first.
    const listed = await user.runs.list({ status: 'succeeded', limit: 1 });
    expect(listed.runs.map((r) => r.id)).toEqual([second.id]);
    const next = await user.runs.list({ status: 'succeeded', limit: 1, cursor: listed.nextCursor });
    expect(next.runs.map((r) => r.id)).toContain(first.id);
  });
});
