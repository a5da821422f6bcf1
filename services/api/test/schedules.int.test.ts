import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime, scheduledRunId } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

const ALICE = { key: 'sched-test-alice-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const BOB = { key: 'sched-test-bob-key', tenantId: 'acme', userId: 'bob', roles: ['user'] };
const ADMIN = { key: 'sched-test-admin-key', tenantId: 'acme', userId: 'root', roles: ['admin'] };
const OTHER = { key: 'sched-test-other-key', tenantId: 'globex', userId: 'eve', roles: ['admin'] };
const CAPPED = { key: 'sched-test-capped-key', tenantId: 'capped', userId: 'carol', roles: ['user'] };

let redis: TestRedis;
let rt: Runtime;
let app: FastifyInstance;
beforeAll(async () => {
  redis = await startTestRedis();
  rt = await createRuntime(
    optionsFromEnv({
      REDIS_URL: redis.url,
      REIN_API_KEYS: JSON.stringify([ALICE, BOB, ADMIN, OTHER, CAPPED]),
      LOG_LEVEL: 'silent',
      REIN_SCHEDULES_PER_TENANT: '10',
    }),
    'schedules-test',
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

const call = async (who: { key: string }, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${who.key}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null };
};
const create = (who: { key: string }, body: Record<string, unknown>) =>
  call(who, 'POST', '/v1/schedules', { input: '支持 7 天无理由退货吗？', cron: '0 3 * * *', ...body });

describe('schedules API', () => {
  it('creates a schedule with its next fire time in its time zone, and a BullMQ job scheduler for it', async () => {
    const res = await create(ALICE, { cron: '30 2 * * *', timezone: 'Asia/Shanghai', metadata: { job: 'reconcile' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      cron: '30 2 * * *',
      timezone: 'Asia/Shanghai',
      overlap: 'skip',
      catchUp: 'none',
      enabled: true,
      userId: 'alice',
      agent: 'order-assistant',
      metadata: { job: 'reconcile' },
    });
    // 02:30 in Shanghai is 18:30 UTC.
    expect(new Date(res.body.nextRunAt).toISOString()).toMatch(/T18:30:00\.000Z$/);
    const scheduler = await rt.scheduleQueue.queue.getJobScheduler(res.body.id);
    expect(scheduler).toMatchObject({ pattern: '30 2 * * *', tz: 'Asia/Shanghai' });
  });

  it.each([
    [{ cron: '61 * * * *' }, 'invalid_cron', /61/],
    [{ cron: '* * *' }, 'invalid_request', /5 fields, or 6/],
    [{ cron: '* * * * * * *' }, 'invalid_request', /5 fields, or 6/],
    [{ cron: '*/2 * * * *', timezone: 'Mars/Olympus' }, 'invalid_timezone', /Mars\/Olympus/],
    [{ overlap: 'queue' }, 'invalid_request', /overlap/],
    [{ agent: 'no-such-agent' }, 'unknown_agent', /no-such-agent/],
  ])('answers 400 with the reason for %j', async (body, code, message) => {
    const res = await create(ALICE, body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).toMatch(message);
  });

  it("keeps one user's schedules from another (404), shows the tenant's to its admin, and none to another tenant", async () => {
    const { body: mine } = await create(ALICE, { cron: '*/5 * * * *' });
    expect((await call(BOB, 'GET', `/v1/schedules/${mine.id}`)).status).toBe(404);
    expect((await call(BOB, 'PATCH', `/v1/schedules/${mine.id}`, { enabled: false })).status).toBe(404);
    expect((await call(BOB, 'DELETE', `/v1/schedules/${mine.id}`)).status).toBe(404);
    expect((await call(BOB, 'GET', '/v1/schedules')).body.schedules.map((s: { id: string }) => s.id)).not.toContain(mine.id);
    expect((await call(OTHER, 'GET', `/v1/schedules/${mine.id}`)).status).toBe(404);
    expect((await call(OTHER, 'GET', '/v1/schedules')).body.schedules).toEqual([]);
    expect((await call(ADMIN, 'GET', `/v1/schedules/${mine.id}`)).status).toBe(200);
    expect((await call(ADMIN, 'GET', '/v1/schedules')).body.schedules.map((s: { id: string }) => s.id)).toContain(mine.id);
    expect((await call(ALICE, 'GET', '/v1/schedules')).body.schedules.map((s: { id: string }) => s.id)).toContain(mine.id);
  });

  it('disables, re-enables and changes a schedule; deleting it removes its job scheduler', async () => {
    const { body: s } = await create(ALICE, { cron: '0 * * * *' });
    const off = await call(ALICE, 'PATCH', `/v1/schedules/${s.id}`, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, nextRunAt: null });
    expect(await rt.scheduleQueue.queue.getJobScheduler(s.id)).toBeUndefined();
    expect((await call(ALICE, 'PATCH', `/v1/schedules/${s.id}`, { cron: 'nope nope nope nope nope' })).body.error.code).toBe(
      'invalid_cron',
    );
    const on = await call(ALICE, 'PATCH', `/v1/schedules/${s.id}`, { enabled: true, cron: '*/10 * * * * *' });
    expect(on.body).toMatchObject({ enabled: true, cron: '*/10 * * * * *' });
    expect(await rt.scheduleQueue.queue.getJobScheduler(s.id)).toMatchObject({ pattern: '*/10 * * * * *' });
    expect((await call(ALICE, 'PATCH', `/v1/schedules/${s.id}`, {})).status).toBe(400);
    expect((await call(ALICE, 'DELETE', `/v1/schedules/${s.id}`)).status).toBe(204);
    expect(await rt.scheduleQueue.queue.getJobScheduler(s.id)).toBeUndefined();
    expect((await call(ALICE, 'GET', `/v1/schedules/${s.id}`)).status).toBe(404);
  });

  it('caps the schedules of a tenant', async () => {
    for (let i = 0; i < 10; i++) expect((await create(CAPPED, {})).status).toBe(201);
    const res = await create(CAPPED, {});
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('too_many_schedules');
  });
});

describe('a firing', () => {
  it('starts one run per fire time as the creator, with scheduleId and scheduledFor, however often it is taken', async () => {
    const { body: s } = await create(ALICE, { cron: '*/2 * * * * *', overlap: 'allow', metadata: { team: 'ops' } });
    const at = Math.ceil(Date.now() / 2000) * 2000;
    const results = await Promise.all([rt.schedules.fire(s.id, at), rt.schedules.fire(s.id, at), rt.schedules.fire(s.id, at)]);
    expect(results.filter((r) => r === 'started')).toHaveLength(1);
    const run = await rt.store.get(scheduledRunId(s.id, at));
    expect(run).toMatchObject({
      tenantId: 'acme',
      userId: 'alice',
      roles: ['user'],
      input: '支持 7 天无理由退货吗？',
      metadata: { team: 'ops', scheduleId: s.id, scheduledFor: new Date(at).toISOString() },
    });
    const { body: detail } = await call(ALICE, 'GET', `/v1/schedules/${s.id}`);
    expect(detail.history).toEqual([
      { scheduledFor: new Date(at).toISOString(), at: expect.any(String), outcome: 'started', runId: run?.id },
    ]);
    expect(detail.runs.map((r: { id: string }) => r.id)).toEqual([run?.id]);
    // The run is visible to its owner like any run of theirs.
    expect((await call(ALICE, 'GET', `/v1/runs/${run?.id}`)).status).toBe(200);
  });

  it('with overlap skip, skips while the previous run is active and says so in the history', async () => {
    const { body: s } = await create(ALICE, { cron: '*/2 * * * * *', overlap: 'skip' });
    const t0 = Math.ceil(Date.now() / 2000) * 2000;
    expect(await rt.schedules.fire(s.id, t0)).toBe('started');
    // Nothing runs the first run here (no worker): it is still queued at the next firing.
    expect(await rt.schedules.fire(s.id, t0 + 2000)).toBe('skipped');
    const { body: detail } = await call(ALICE, 'GET', `/v1/schedules/${s.id}`);
    expect(detail.history[0]).toMatchObject({
      outcome: 'skipped',
      runId: scheduledRunId(s.id, t0),
      reason: expect.stringMatching(/queued/),
    });
    expect(await rt.store.get(scheduledRunId(s.id, t0 + 2000))).toBeNull();
  });

  it('after an outage runs the latest missed firing once with catchUp last, and none with catchUp none', async () => {
    const now = Date.now();
    const stale = Math.floor(now / 2000) * 2000 - 10_000; // five fire times ago
    const { body: last } = await create(ALICE, { cron: '*/2 * * * * *', overlap: 'allow', catchUp: 'last' });
    expect(await rt.schedules.fire(last.id, stale)).toBe('started');
    const { body: detail } = await call(ALICE, 'GET', `/v1/schedules/${last.id}`);
    const ran = Date.parse(detail.history[0].scheduledFor);
    expect(ran).toBeGreaterThan(stale);
    expect(ran).toBeLessThanOrEqual(Date.now());
    // One run for the outage, under the missed firing's id: a retry of that job later finds it.
    const run = await rt.store.get(scheduledRunId(last.id, stale));
    expect(run?.metadata.scheduledFor).toBe(new Date(ran).toISOString());
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await rt.schedules.fire(last.id, stale)).toBe('replayed');

    const { body: none } = await create(ALICE, { cron: '*/2 * * * * *', overlap: 'allow', catchUp: 'none' });
    expect(await rt.schedules.fire(none.id, stale)).toBe('missed');
    expect((await call(ALICE, 'GET', `/v1/schedules/${none.id}`)).body.history).toMatchObject([{ outcome: 'missed' }]);
  });

  it('does nothing for a disabled or deleted schedule, and drops a timer a lost race left on', async () => {
    const { body: s } = await create(ALICE, { cron: '*/2 * * * * *', enabled: false });
    await rt.scheduleQueue.upsert(s);
    expect(await rt.schedules.fire(s.id, Date.now())).toBe('disabled');
    expect(await rt.scheduleQueue.queue.getJobScheduler(s.id)).toBeUndefined();
    await call(ALICE, 'DELETE', `/v1/schedules/${s.id}`);
    expect(await rt.schedules.fire(s.id, Date.now())).toBe('gone');
  });
});
