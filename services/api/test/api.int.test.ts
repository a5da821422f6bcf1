import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime, runKeys } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

const USER = { key: 'api-test-user-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const OTHER = { key: 'api-test-other-key', tenantId: 'globex', userId: 'eve', roles: ['user'] };
const ADMIN = { key: 'api-test-admin-key', tenantId: 'acme', userId: 'root', roles: ['admin'] };
const OTHER_ADMIN = { key: 'api-test-other-admin-key', tenantId: 'globex', userId: 'gadmin', roles: ['admin'] };
const OPERATOR = { key: 'api-test-operator-key', tenantId: 'ops', userId: 'oncall', roles: ['operator'] };

let redis: TestRedis;
let rt: Runtime;
let app: FastifyInstance;
beforeAll(async () => {
  redis = await startTestRedis();
  rt = await createRuntime(
    optionsFromEnv({
      REDIS_URL: redis.url,
      REIN_API_KEYS: JSON.stringify([USER, OTHER, ADMIN, OTHER_ADMIN, OPERATOR]),
      LOG_LEVEL: 'silent',
      REIN_MAX_BODY_BYTES: '2048',
    }),
    'api-test',
    'producer',
    orderApp,
  );
  app = createApiApp(rt);
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await rt.close();
  await redis.stop();
});

const as = (who: { key: string }, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${who.key}`, ...extra });

describe('runs API', () => {
  it('rejects a missing or unknown key with 401 and the error envelope', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/runs' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: { code: 'unauthorized', message: 'missing or unknown API key' } });
    expect((await app.inject({ method: 'GET', url: '/v1/runs', headers: { authorization: 'Bearer nope-nope-nope' } })).statusCode).toBe(
      401,
    );
  });

  it('accepts a run with 202, stores it queued and enqueues step 0 with a deterministic id', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: '支持 7 天无理由退货吗？' } });
    expect(res.statusCode).toBe(202);
    const run = res.json();
    expect(run).toMatchObject({
      status: 'queued',
      agent: 'order-assistant',
      step: 0,
      limits: { maxSteps: 8, maxTokens: 30000, timeoutMs: 120000 },
    });
    const job = await rt.scheduler.queueOf(run.id).getJob(`${run.id}-0`);
    // The job carries the run's W3C trace context, so the workers' spans join its trace.
    expect(run.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(job?.data).toEqual({
      runId: run.id,
      step: 0,
      tenantId: USER.tenantId,
      traceparent: expect.stringMatching(new RegExp(`^00-${run.traceId}-[0-9a-f]{16}-0[01]$`)),
    });
  });

  it('names the offending field of a bad body with 400, and refuses unknown fields and agents', async () => {
    const empty = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: '' } });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('input') });
    const extra = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'hi', tenantId: 'globex' } });
    expect(extra.statusCode).toBe(400);
    const agent = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'hi', agent: 'root-shell' } });
    expect(agent.json().error.code).toBe('unknown_agent');
    const limits = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: as(USER),
      payload: { input: 'hi', limits: { maxSteps: 0 } },
    });
    expect(limits.json().error.message).toContain('limits.maxSteps');
  });

  it('refuses bodies over the size limit with 413', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'x'.repeat(4000) } });
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('payload_too_large');
  });

  it('returns the same run for a repeated Idempotency-Key', async () => {
    const headers = as(USER, { 'idempotency-key': 'order-2024001-complaint' });
    const first = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'first' } });
    const second = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'first' } });
    expect(first.statusCode).toBe(202);
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json().id).toBe(first.json().id);
  });

  it("shows a tenant only its own runs: 404 for another tenant's", async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'mine' } })).json();
    expect((await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: as(OTHER) })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: `/v1/runs/${id}/trace`, headers: as(OTHER) })).statusCode).toBe(404);
    expect((await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: as(OTHER) })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/v1/runs', headers: as(OTHER) })).json().runs).toEqual([]);
    const mine = (await app.inject({ method: 'GET', url: '/v1/runs?status=queued', headers: as(USER) })).json().runs;
    expect(mine.map((r: { id: string }) => r.id)).toContain(id);
  });

  it('cancels a queued run once; a second cancel is a 409', async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'cancel me' } })).json();
    const cancelled = await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: as(USER) });
    expect(cancelled.json()).toMatchObject({ status: 'cancelled', reason: 'cancelled' });
    const again = await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: as(USER) });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('run_finished');
  });

  it('reports readiness from Redis and serves Prometheus metrics', async () => {
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ ok: true, redis: 'ok' });
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain('rein_runs_submitted_total{agent="order-assistant",service="api-test"}');
  });
});

describe('decision snapshots', () => {
  it('are readable by admins only', async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'snapshot me' } })).json();
    const denied = await app.inject({ method: 'GET', url: `/v1/runs/${id}/snapshots`, headers: as(USER) });
    expect(denied.statusCode).toBe(403);
    await rt.journal.snapshot(id, {
      schemaVersion: 1,
      step: 0,
      at: new Date().toISOString(),
      request: { model: 'm', messages: [], tools: [], maxTokens: 1, timeoutMs: 1 },
      reply: { id: 'x' },
    });
    const ok = await app.inject({ method: 'GET', url: `/v1/runs/${id}/snapshots`, headers: as(ADMIN) });
    expect(ok.json()).toMatchObject({ runId: id, snapshots: [{ step: 0, reply: { id: 'x' } }] });
    // Kept while the run lives; from its terminal commit on, as long as its trace.
    expect(await rt.redis.ttl(`rein:{${id}}:snapshots`)).toBe(-1);
    await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: as(USER) });
    expect(await rt.redis.ttl(`rein:{${id}}:snapshots`)).toBeGreaterThan(29 * 86_400);
  });
});

describe('queue board (Bull Board)', () => {
  const basic = (key: string) => `Basic ${Buffer.from(`ops:${key}`).toString('base64')}`;

  it('is behind operator auth: it shows every tenant, so a tenant admin gets 403', async () => {
    const anonymous = await app.inject({ method: 'GET', url: '/admin/queues' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic realm="rein-admin"/);
    for (const who of [USER, ADMIN, OTHER_ADMIN]) {
      for (const url of ['/admin/queues', '/admin/queues/api/queues']) {
        const res = await app.inject({ method: 'GET', url, headers: { authorization: basic(who.key) } });
        expect(res.statusCode, `${who.userId} ${url}`).toBe(403);
        expect(res.json().error.code).toBe('forbidden');
      }
    }
    const operator = await app.inject({ method: 'GET', url: '/admin/queues', headers: { authorization: basic(OPERATOR.key) } });
    expect(operator.statusCode).toBe(200);
    expect(operator.headers['content-type']).toMatch(/text\/html/);
  });

  it('is read-only and shows only run id and step of a job', async () => {
    await rt.scheduler.queues[0]!.pause(); // keep the job waiting while we look (no worker runs here anyway)
    const { id } = (
      await app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: as(USER),
        payload: { input: 'my phone is 13812345678', metadata: { note: 'secret' } },
      })
    ).json();
    const res = await app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues?activeQueue=rein-steps&status=waiting&page=1',
      headers: { authorization: basic(OPERATOR.key) },
    });
    expect(res.statusCode).toBe(200);
    const queue = res.json().queues.find((q: { name: string }) => q.name === 'rein-steps');
    expect(queue.readOnlyMode).toBe(true);
    const job = queue.jobs.find((j: { data: { runId: string } }) => j.data.runId === id);
    expect(job.data).toEqual({ runId: id, step: 0 });
    expect(res.body).not.toContain('13812345678');
    const retry = await app.inject({
      method: 'PUT',
      url: `/admin/queues/api/queues/rein-steps/${id}-0/retry/failed`,
      headers: { authorization: basic(OPERATOR.key) },
    });
    expect(retry.statusCode).toBeGreaterThanOrEqual(400);
    await rt.scheduler.queues[0]!.resume();
  });
});

describe('webhooks, sessions and listing routes', () => {
  it('manages webhooks for tenant admins only, validates URLs, and shows deliveries on the board without their data', async () => {
    const body = { url: 'https://hooks.example.com/rein', events: ['run.finished'] };
    expect((await app.inject({ method: 'POST', url: '/v1/webhooks', headers: as(USER), payload: body })).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: '/v1/webhooks', headers: as(USER) })).statusCode).toBe(403);
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: as(ADMIN),
      payload: { ...body, url: 'file:///etc/passwd' },
    });
    expect(bad.statusCode).toBe(400);
    const unknownEvent = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: as(ADMIN),
      payload: { ...body, events: ['run.started'] },
    });
    expect(unknownEvent.statusCode).toBe(400);
    const refused = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: as(ADMIN),
      payload: { ...body, url: 'http://169.254.169.254/latest/meta-data/' },
    });
    expect(refused.json()).toMatchObject({ error: { code: 'webhook_url_refused' } });
    expect(refused.statusCode).toBe(400);
    const credentials = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: as(ADMIN),
      payload: { ...body, url: 'https://user:secret@hooks.example.com/rein' },
    });
    expect(credentials.statusCode).toBe(400);
    expect(credentials.json()).toMatchObject({ error: { code: 'invalid_request' } });

    // Stored directly (as if its host resolved publicly): what a delivery job looks like on the board.
    await rt.webhookStore.put({
      schemaVersion: 1,
      id: 'wh_board',
      tenantId: 'acme',
      url: 'https://hooks.example.com/rein',
      events: ['run.finished'],
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      createdBy: 'root',
      createdAt: new Date().toISOString(),
    });
    await rt.dispatcher.emit('acme', 'run.finished', 'r-board', { runId: 'r-board', finalAnswer: 'my phone is 13812345678' });
    const res = await app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues?activeQueue=rein-webhooks&status=waiting&page=1',
      headers: { authorization: `Bearer ${OPERATOR.key}` },
    });
    const queue = res.json().queues.find((q: { name: string }) => q.name === 'rein-webhooks');
    expect(queue.jobs.map((j: { data: unknown }) => j.data)).toEqual([
      { tenantId: 'acme', webhookId: 'wh_board', messageId: expect.stringMatching(/^msg_/), type: 'run.finished' },
    ]);
    expect(res.body).not.toContain('13812345678');
    await rt.webhookStore.put({ ...(await rt.webhookStore.get('acme', 'wh_board'))!, url: 'https://hooks.example.com/rein?token=s3cret' });
    const listed = await app.inject({ method: 'GET', url: '/v1/webhooks', headers: as(ADMIN) });
    expect(listed.json().webhooks.map((w: { url: string }) => w.url)).toEqual(['https://hooks.example.com/rein?token=redacted']);
    expect((await app.inject({ method: 'DELETE', url: '/v1/webhooks/wh_board', headers: as(ADMIN) })).statusCode).toBe(204);
    expect((await app.inject({ method: 'DELETE', url: '/v1/webhooks/wh_board', headers: as(ADMIN) })).statusCode).toBe(404);
  });

  it('validates listing filters and cursors, and keeps sessions per user', async () => {
    for (const query of ['createdAfter=yesterday', 'status=done', 'cursor=garbage', 'limit=0']) {
      const res = await app.inject({ method: 'GET', url: `/v1/runs?${query}`, headers: as(USER) });
      expect(res.statusCode, query).toBe(400);
    }
    expect((await app.inject({ method: 'GET', url: '/v1/runs?userId=bob', headers: as(USER) })).statusCode).toBe(403);
    await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'hi', sessionId: 'api-s1' } });
    const busy = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'again', sessionId: 'api-s1' } });
    expect(busy.statusCode).toBe(409);
    expect(busy.json().error.code).toBe('session_busy');
    expect((await app.inject({ method: 'GET', url: '/v1/sessions/api-s1', headers: as(USER) })).json().runs).toHaveLength(1);
    expect((await app.inject({ method: 'GET', url: '/v1/sessions/api-s1', headers: as(OTHER) })).statusCode).toBe(404);
  });
});

describe('run events (server-sent events)', () => {
  it("streams the run's events with stream ids, ends at run.finished, and resumes after Last-Event-ID", async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'follow me' } })).json();
    await rt.store.appendEvent({ type: 'run.finished', runId: id, step: 0, at: new Date().toISOString(), data: { status: 'cancelled' } });
    const all = await app.inject({ method: 'GET', url: `/v1/runs/${id}/events`, headers: as(USER) });
    expect(all.headers['content-type']).toBe('text/event-stream');
    const frames = [...all.body.matchAll(/id: (\S+)\nevent: (\S+)\ndata: (.*)\n\n/g)];
    expect(frames.map((f) => f[2])).toEqual(['run.queued', 'run.finished']);
    expect(JSON.parse(frames[0]?.[3] ?? '{}')).toMatchObject({ type: 'run.queued', runId: id });
    const resumed = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/events`,
      headers: as(USER, { 'last-event-id': frames[0]?.[1] ?? '' }),
    });
    expect([...resumed.body.matchAll(/event: (\S+)/g)].map((m) => m[1])).toEqual(['run.finished']);
    expect((await app.inject({ method: 'GET', url: `/v1/runs/${id}/events`, headers: as(OTHER) })).statusCode).toBe(404);
  });

  it('masks every event a reader receives like the final answer: deltas, thoughts, observations', async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'leak' } })).json();
    const at = new Date().toISOString();
    await rt.store.appendEvent({ type: 'model.delta', runId: id, step: 0, at, data: { text: 'call 138 1234 5678' } });
    await rt.store.appendEvent({ type: 'step.finished', runId: id, step: 0, at, data: { thought: 'mail li.lei@example.com' } });
    await rt.store.appendEvent({
      type: 'tool.result',
      runId: id,
      step: 0,
      at,
      data: { observation: '{"phone":"１３８１２３４５６７８"}' },
    });
    await rt.store.appendEvent({ type: 'run.finished', runId: id, step: 0, at, data: { status: 'cancelled' } });
    const res = await app.inject({ method: 'GET', url: `/v1/runs/${id}/events`, headers: as(USER) });
    expect(res.body).toContain('138****5678');
    expect(res.body).toContain('l***@example.com');
    expect(res.body).not.toMatch(/1234|li\.lei|１３８/);
  });

  it("ends a finished run's stream whatever Last-Event-ID it resumes from (at its end, or past it)", async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'stop me' } })).json();
    await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: as(USER) });
    const [last] = await rt.redis.xrevrange(runKeys(id).events, '+', '-', 'COUNT', 1);
    expect(last).toBeDefined();
    for (const cursor of [last?.[0] ?? '', '99999999999999-0']) {
      // Before the fix each of these waited for ever, a heartbeat every 15 s.
      const res = await app.inject({ method: 'GET', url: `/v1/runs/${id}/events`, headers: as(USER, { 'last-event-id': cursor }) });
      expect(res.statusCode).toBe(200);
      expect(res.body).not.toContain('event:');
    }
  });
});

describe('app versions are fleet-wide: operators manage them, a tenant admin reads its own tenant', () => {
  it('refuses promote and upgrade to tenant admins (403) and lets an operator through', async () => {
    const own = rt.versions.own;
    for (const who of [ADMIN, OTHER_ADMIN, USER]) {
      const up = await app.inject({ method: 'POST', url: `/v1/versions/${own}/upgrade`, headers: as(who), payload: { to: own } });
      expect(up.statusCode, who.userId).toBe(403);
      expect(up.json().error.code).toBe('forbidden');
      const promote = await app.inject({ method: 'POST', url: `/v1/versions/${own}/promote`, headers: as(who), payload: {} });
      expect(promote.statusCode, who.userId).toBe(403);
    }
    // Past the role check: the operator meets the version's own rules (no worker runs it here).
    const promote = await app.inject({ method: 'POST', url: `/v1/versions/${own}/promote`, headers: as(OPERATOR), payload: {} });
    expect(promote.json().error.code).toBe('version_not_live');
  });

  it("counts only the caller's tenant for a tenant admin, the whole fleet for an operator", async () => {
    const queued = async (who: { key: string }) => {
      const res = await app.inject({ method: 'GET', url: '/v1/versions', headers: as(who) });
      expect(res.statusCode).toBe(200);
      return (res.json().versions.find((v: { version: string }) => v.version === rt.versions.own)?.runs.queued ?? 0) as number;
    };
    await rt.versions.heartbeat();
    const before = { acme: await queued(ADMIN), globex: await queued(OTHER_ADMIN), fleet: await queued(OPERATOR) };
    const submit = (who: { key: string }) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers: as(who), payload: { input: 'count me' } });
    await submit(USER); // acme
    await submit(USER); // acme
    await submit(OTHER); // globex
    expect(await queued(ADMIN)).toBe(before.acme + 2);
    expect(await queued(OTHER_ADMIN)).toBe(before.globex + 1);
    expect(await queued(OPERATOR)).toBe(before.fleet + 3);
    expect((await app.inject({ method: 'GET', url: '/v1/versions', headers: as(USER) })).statusCode).toBe(403);
  });
});
