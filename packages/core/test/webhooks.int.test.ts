import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Principal } from '@rein/contract';
import { createWebhookBodySchema, verifyWebhook } from '@rein/contract';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createWebhookDelivery, WebhookDeliveryFailedError } from '../src/features/webhooks/webhook-delivery.js';
import { type DeliveryJob, deliveryJobSchema, WebhookDispatcher } from '../src/features/webhooks/webhook-dispatcher.js';
import { createWebhookService, MAX_WEBHOOKS_PER_TENANT } from '../src/features/webhooks/webhook-service.js';
import { WebhookStore } from '../src/features/webhooks/webhook-store.js';
import { ForbiddenError } from '../src/shared/errors.js';
import { createMetrics } from '../src/shared/metrics.js';
import { startTestRedis, type TestRedis } from '../src/testing/redis-server.js';

const ADMIN: Principal = { tenantId: 'acme', userId: 'root', roles: ['admin'] };
const USER: Principal = { tenantId: 'acme', userId: 'alice', roles: ['user', 'approver'] };
const OTHER_ADMIN: Principal = { tenantId: 'globex', userId: 'root', roles: ['admin'] };

/** IPv6 forms of private IPv4 addresses, and documentation and reserved ranges, as URL hosts. */
const DISGUISED_HOSTS = [
  '[64:ff9b::a9fe:a9fe]',
  '[64:ff9b::7f00:1]',
  '[2002:7f00:1::1]',
  '[2002:a9fe:a9fe::1]',
  '[::127.0.0.1]',
  '[::ffff:0:7f00:1]',
  '192.0.2.10',
  '198.51.100.10',
  '203.0.113.10',
  '[2001:db8::1]',
  '[fec0::1]',
  '[100::1]',
];

/** A receiving endpoint: answers with the next status of `statuses` (then 200) and keeps what it got. */
function receiver(statuses: number[] = []) {
  const got: Array<{ headers: IncomingMessage['headers']; body: string }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  return {
    got,
    async start() {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    },
    stop: () => new Promise((r) => server.close(r)),
  };
}

describe('webhooks', () => {
  let testRedis: TestRedis;
  let redis: Redis;
  let hooks: WebhookStore;
  const logger = pino({ level: 'silent' });
  beforeAll(async () => {
    testRedis = await startTestRedis();
    redis = new Redis(testRedis.url, { maxRetriesPerRequest: null });
    hooks = new WebhookStore(redis);
  });
  afterAll(async () => {
    redis.disconnect();
    await testRedis.stop();
  });
  beforeEach(async () => {
    await redis.flushdb();
  });

  describe('management', () => {
    const service = (allowPrivate: boolean) => createWebhookService({ store: hooks, allowPrivate });

    it('lets tenant admins only create, list and delete; the secret is shown once, as whsec_<base64>', async () => {
      const s = service(true);
      await expect(s.create(USER, { url: 'http://127.0.0.1:1/x', events: ['run.finished'] })).rejects.toBeInstanceOf(ForbiddenError);
      await expect(s.list(USER)).rejects.toMatchObject({ status: 403 });
      const created = await s.create(ADMIN, { url: 'http://127.0.0.1:1/x', events: ['run.finished', 'approval.requested'] });
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);
      const listed = await s.list(ADMIN);
      expect(listed).toEqual([
        { id: created.id, url: created.url, events: created.events, createdBy: 'root', createdAt: created.createdAt },
      ]);
      expect(await s.list(OTHER_ADMIN)).toEqual([]);
      await expect(s.remove(OTHER_ADMIN, created.id)).rejects.toMatchObject({ status: 404 });
      await expect(s.deliveries(OTHER_ADMIN, created.id)).rejects.toMatchObject({ status: 404 });
      await s.remove(ADMIN, created.id);
      expect(await s.list(ADMIN)).toEqual([]);
    });

    it.each([
      'http://127.0.0.1:8080/x',
      'http://localhost/x',
      'http://[::1]/x',
      'http://169.254.169.254/latest/meta-data',
      'https://10.0.0.5/x',
    ])('refuses %s at creation (400 webhook_url_refused) unless private addresses are allowed', async (url) => {
      await expect(service(false).create(ADMIN, { url, events: ['run.finished'] })).rejects.toMatchObject({
        status: 400,
        code: 'webhook_url_refused',
      });
      await expect(service(true).create(ADMIN, { url, events: ['run.finished'] })).resolves.toMatchObject({ url });
    });

    it.each(DISGUISED_HOSTS)('refuses http://%s/ at creation', async (host) => {
      await expect(service(false).create(ADMIN, { url: `http://${host}/x`, events: ['run.finished'] })).rejects.toMatchObject({
        status: 400,
        code: 'webhook_url_refused',
      });
    });

    it('refuses a name without saying what it resolves to (no DNS oracle)', async () => {
      const err = await service(false)
        .create(ADMIN, { url: 'http://localhost:9/x', events: ['run.finished'] })
        .catch((e: Error) => e);
      expect(err).toMatchObject({ code: 'webhook_url_refused' });
      expect((err as Error).message).not.toMatch(/127\.0\.0\.1|::1/);
    });

    it('refuses credentials in the URL, and lists query values redacted', async () => {
      const parsed = createWebhookBodySchema.safeParse({ url: 'http://user:secret@hooks.example.com/x', events: ['run.finished'] });
      expect(parsed.success).toBe(false);
      expect(createWebhookBodySchema.safeParse({ url: 'http://user@hooks.example.com/x', events: ['run.finished'] }).success).toBe(false);
      const s = service(true);
      const created = await s.create(ADMIN, { url: 'http://127.0.0.1:1/x?token=s3cret&token=two&plain', events: ['run.finished'] });
      expect(created.url).toBe('http://127.0.0.1:1/x?token=redacted&token=redacted&plain=redacted');
      // One stored before userinfo was refused: listed without it, still delivered to as stored.
      await hooks.put({ ...(await hooks.get('acme', created.id))!, id: 'wh_old', url: 'http://user:pw@127.0.0.1:1/y?k=v' });
      const listed = await s.list(ADMIN);
      expect(listed.map((h) => h.url).sort()).toEqual([
        'http://127.0.0.1:1/x?token=redacted&token=redacted&plain=redacted',
        'http://redacted@127.0.0.1:1/y?k=redacted',
      ]);
      expect(JSON.stringify(listed)).not.toMatch(/s3cret|pw|two/);
      expect((await hooks.get('acme', created.id))?.url).toBe('http://127.0.0.1:1/x?token=s3cret&token=two&plain');
    });

    it(`stores at most ${MAX_WEBHOOKS_PER_TENANT} webhooks of 60 created at once`, async () => {
      const s = service(true);
      const results = await Promise.allSettled(
        Array.from({ length: 60 }, (_, i) => s.create(ADMIN, { url: `http://127.0.0.1:1/${i}`, events: ['run.finished'] })),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(MAX_WEBHOOKS_PER_TENANT);
      for (const r of results.filter((r) => r.status === 'rejected')) expect(r.reason).toMatchObject({ code: 'too_many_webhooks' });
      expect(await s.list(ADMIN)).toHaveLength(MAX_WEBHOOKS_PER_TENANT);
    });
  });

  describe('delivery', () => {
    const job = (webhookId: string, over: Partial<DeliveryJob> = {}): DeliveryJob =>
      deliveryJobSchema.parse({
        webhookId,
        tenantId: 'acme',
        messageId: 'msg_test1',
        type: 'run.finished',
        timestamp: '2026-01-01T00:00:00.000Z',
        data: { runId: 'r1', status: 'succeeded' },
        ...over,
      });

    it('signs per Standard Webhooks, keeps the webhook-id across a failed and a retried attempt, and logs both', async () => {
      const r = receiver([500]);
      const url = await r.start();
      const metrics = createMetrics('test');
      const hook = await createWebhookService({ store: hooks, allowPrivate: true }).create(ADMIN, { url, events: ['run.finished'] });
      const deliver = createWebhookDelivery({ hooks, metrics, logger, timeoutMs: 2000, allowPrivate: true });
      await expect(deliver(job(hook.id), 1, false)).rejects.toBeInstanceOf(WebhookDeliveryFailedError);
      await expect(deliver(job(hook.id), 2, false)).resolves.toBe('delivered');
      await r.stop();

      expect(r.got).toHaveLength(2);
      expect(r.got.map((g) => g.headers['webhook-id'])).toEqual(['msg_test1', 'msg_test1']);
      for (const g of r.got) {
        expect(g.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
        expect(verifyWebhook(hook.secret, g.body, g.headers as Record<string, string>)).toEqual({
          type: 'run.finished',
          timestamp: '2026-01-01T00:00:00.000Z',
          data: { runId: 'r1', status: 'succeeded' },
        });
      }
      // Another secret, or a body changed in transit, does not verify.
      const other = await createWebhookService({ store: hooks, allowPrivate: true }).create(ADMIN, { url, events: ['run.finished'] });
      const first = r.got[0] as { body: string; headers: Record<string, string> };
      expect(() => verifyWebhook(other.secret, first.body, first.headers)).toThrow();
      expect(() => verifyWebhook(hook.secret, first.body.replace('succeeded', 'failed'), first.headers)).toThrow();

      const { attempts } = await createWebhookService({ store: hooks, allowPrivate: true }).deliveries(ADMIN, hook.id);
      expect(attempts.map((a) => [a.attempt, a.outcome, a.status])).toEqual([
        [2, 'delivered', 200],
        [1, 'failed', 500],
      ]);
      const counted = await metrics.registry.getSingleMetric('rein_webhook_deliveries_total')?.get();
      expect(counted?.values.map((v) => [v.labels.outcome, v.value]).sort()).toEqual([
        ['delivered', 1],
        ['failed', 1],
      ]);
    });

    it('counts an endpoint that does not answer in time as a failed attempt', async () => {
      const silent = createServer(() => {}); // takes the request, never answers
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`;
      const hook = await createWebhookService({ store: hooks, allowPrivate: true }).create(ADMIN, { url, events: ['run.finished'] });
      const deliver = createWebhookDelivery({ hooks, metrics: createMetrics('test'), logger, timeoutMs: 200, allowPrivate: true });
      await expect(deliver(job(hook.id), 1, false)).rejects.toThrow(/no response within 200 ms/);
      expect((await hooks.attempts('acme', hook.id))[0]).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/200 ms/) });
      silent.closeAllConnections();
      silent.close();
    });

    it.each([
      ['a body that never ends', (res: ServerResponse) => res.writeHead(200).write('still sending…')],
      ['a large body', (res: ServerResponse) => res.writeHead(200).end('x'.repeat(8 * 1024 * 1024))],
    ])('counts a 2xx status line as delivered whatever follows: %s', async (_what, answer) => {
      let requests = 0;
      const server = createServer((req, res) => {
        requests++;
        req.resume();
        req.on('end', () => answer(res));
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const hook = await createWebhookService({ store: hooks, allowPrivate: true }).create(ADMIN, { url, events: ['run.finished'] });
      const deliver = createWebhookDelivery({ hooks, metrics: createMetrics('test'), logger, timeoutMs: 300, allowPrivate: true });
      await expect(deliver(job(hook.id), 1, false)).resolves.toBe('delivered');
      expect(requests).toBe(1);
      expect((await hooks.attempts('acme', hook.id)).map((a) => a.outcome)).toEqual(['delivered']);
      server.closeAllConnections();
      server.close();
    });

    it.each(DISGUISED_HOSTS)('refuses http://%s/ at delivery, without calling it', async (host) => {
      await hooks.put({
        schemaVersion: 1,
        id: 'wh_disguised',
        tenantId: 'acme',
        url: `http://${host}:9/hook`,
        events: ['run.finished'],
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        createdBy: 'root',
        createdAt: new Date().toISOString(),
      });
      const deliver = createWebhookDelivery({ hooks, metrics: createMetrics('test'), logger, timeoutMs: 2000, allowPrivate: false });
      await expect(deliver(job('wh_disguised'), 1, false)).resolves.toBe('refused');
      const [attempt] = await hooks.attempts('acme', 'wh_disguised');
      expect(attempt).toMatchObject({ outcome: 'refused' });
    });

    it('logs the last failed attempt as gave_up', async () => {
      const r = receiver([503]);
      const url = await r.start();
      const hook = await createWebhookService({ store: hooks, allowPrivate: true }).create(ADMIN, { url, events: ['run.finished'] });
      const deliver = createWebhookDelivery({ hooks, metrics: createMetrics('test'), logger, timeoutMs: 2000, allowPrivate: true });
      await expect(deliver(job(hook.id), 13, true)).rejects.toBeInstanceOf(WebhookDeliveryFailedError);
      await r.stop();
      expect((await hooks.attempts('acme', hook.id)).map((a) => a.outcome)).toEqual(['gave_up']);
    });

    it('checks the address again at delivery time: a host that now resolves to loopback is refused, not called', async () => {
      const r = receiver();
      const url = await r.start();
      const port = new URL(url).port;
      // Stored as if it had passed the check at creation (DNS changed since).
      for (const [id, host] of [
        ['wh_literal', '127.0.0.1'],
        ['wh_named', 'localhost'],
      ] as const) {
        await hooks.put({
          schemaVersion: 1,
          id,
          tenantId: 'acme',
          url: `http://${host}:${port}/hook`,
          events: ['run.finished'],
          secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
          createdBy: 'root',
          createdAt: new Date().toISOString(),
        });
        const deliver = createWebhookDelivery({ hooks, metrics: createMetrics('test'), logger, timeoutMs: 2000, allowPrivate: false });
        await expect(deliver(job(id), 1, false)).resolves.toBe('refused');
        expect((await hooks.attempts('acme', id))[0]).toMatchObject({ outcome: 'refused' });
      }
      await r.stop();
      expect(r.got).toEqual([]);
    });

    it('drops deliveries of a deleted webhook', async () => {
      const deliver = createWebhookDelivery({ hooks, metrics: createMetrics('test'), logger, timeoutMs: 2000, allowPrivate: true });
      await expect(deliver(job('wh_gone'), 1, false)).resolves.toBe('dropped');
    });
  });

  describe('dispatch', () => {
    it("puts the approval's console URL (REIN_CONSOLE_URL) on the events that ask someone to decide", async () => {
      const s = createWebhookService({ store: hooks, allowPrivate: true });
      await s.create(ADMIN, { url: 'http://127.0.0.1:1/asks', events: ['approval.requested', 'approval.decided'] });
      const dispatcher = new WebhookDispatcher({ url: testRedis.url }, hooks, createMetrics('test'), logger, {
        consoleUrl: 'https://approvals.example.test',
      });
      try {
        const at = new Date().toISOString();
        const id = '00000000-0000-4000-8000-000000000001.0.0';
        await dispatcher.onFeedEvent('acme', { type: 'approval.requested', approvalId: id, runId: 'r', status: 'pending', at });
        await dispatcher.onFeedEvent('acme', { type: 'approval.decided', approvalId: id, runId: 'r', status: 'approved', at });
        const jobs = await dispatcher.queue.getJobs(['waiting', 'delayed', 'active']);
        const byType = Object.fromEntries(jobs.map((j) => [j.data.type, j.data.data]));
        expect(byType['approval.requested']).toMatchObject({ consoleUrl: `https://approvals.example.test/console?approval=${id}` });
        expect(byType['approval.decided']).not.toHaveProperty('consoleUrl');
      } finally {
        await dispatcher.queue.obliterate({ force: true });
        await dispatcher.close();
      }
    });

    it("enqueues an event once per subscribed webhook of the event's tenant only, and once per event", async () => {
      const s = createWebhookService({ store: hooks, allowPrivate: true });
      const finished = await s.create(ADMIN, { url: 'http://127.0.0.1:1/a', events: ['run.finished'] });
      await s.create(ADMIN, { url: 'http://127.0.0.1:1/b', events: ['approval.requested'] });
      const elsewhere = await s.create(OTHER_ADMIN, { url: 'http://127.0.0.1:1/c', events: ['run.finished'] });
      const dispatcher = new WebhookDispatcher({ url: testRedis.url }, hooks, createMetrics('test'), logger);
      try {
        const run = { id: 'r1', tenantId: 'acme', status: 'succeeded', agent: 'a', userId: 'alice', usage: {}, updatedAt: 'now' };
        await dispatcher.onRunFinished(run as never);
        await dispatcher.onRunFinished(run as never); // a repeated emit of the same event
        const jobs = await dispatcher.queue.getJobs(['waiting', 'delayed', 'active']);
        expect(jobs.map((j) => j.data.webhookId)).toEqual([finished.id]);
        expect(jobs.map((j) => j.data.webhookId)).not.toContain(elsewhere.id);
        expect(jobs[0]?.data).toMatchObject({ type: 'run.finished', tenantId: 'acme', data: { runId: 'r1', status: 'succeeded' } });
        expect(jobs[0]?.data.messageId).toMatch(/^msg_[0-9a-f]{32}$/);
        expect(jobs[0]?.opts.attempts).toBeGreaterThan(1);
      } finally {
        await dispatcher.close();
      }
    });
  });
});
