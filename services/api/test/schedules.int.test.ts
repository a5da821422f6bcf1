import type { Principal, ScheduleRecord } from '@rein/contract';
import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime, ScheduleStore, SignInStore, scheduledRunId } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
    // Its read lists the next five fire times, computed in its zone: 02:30 in Shanghai on five days in a row.
    const { nextFirings } = (await call(ALICE, 'GET', `/v1/schedules/${res.body.id}`)).body as { nextFirings: string[] };
    expect(nextFirings).toHaveLength(5);
    expect(nextFirings[0]).toBe(res.body.nextRunAt);
    expect(nextFirings.every((t) => t.endsWith('T18:30:00.000Z'))).toBe(true);
    expect(nextFirings.slice(1).map((t, i) => Date.parse(t) - Date.parse(nextFirings[i] as string))).toEqual(Array(4).fill(86_400_000));
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
    expect((await call(ALICE, 'GET', `/v1/schedules/${s.id}`)).body.nextFirings).toEqual([]);
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

  it('caps the schedules of a tenant, however many creations arrive at once', async () => {
    const all = await Promise.all(Array.from({ length: 40 }, () => create(CAPPED, {})));
    expect(all.filter((r) => r.status === 201)).toHaveLength(10);
    const refused = all.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(30);
    for (const r of refused) expect(r.body.error.code).toBe('too_many_schedules');
    expect((await call(CAPPED, 'GET', '/v1/schedules')).body.schedules).toHaveLength(10);
    // A deletion frees a place.
    const [first] = all.filter((r) => r.status === 201);
    expect((await call(CAPPED, 'DELETE', `/v1/schedules/${first?.body.id}`)).status).toBe(204);
    expect((await create(CAPPED, {})).status).toBe(201);
    expect((await create(CAPPED, {})).status).toBe(409);
  });

  it('counts and lists schedules stored before the per-tenant index existed', async () => {
    const at = new Date().toISOString();
    const legacy = (id: string): ScheduleRecord => ({
      schemaVersion: 1,
      id,
      owner: { tenantId: 'legacy', userId: 'lee', roles: ['user'] },
      agent: 'order-assistant',
      input: 'hi',
      cron: '0 3 * * *',
      timezone: 'UTC',
      overlap: 'skip',
      catchUp: 'none',
      metadata: {},
      enabled: false,
      createdAt: at,
      updatedAt: at,
    });
    // As an earlier release left them: in the fleet's hash only.
    await rt.redis.del('rein:{schedules}:indexed');
    for (const id of ['old-1', 'old-2']) await rt.redis.hset('rein:{schedules}:all', id, JSON.stringify(legacy(id)));
    const store = new ScheduleStore(rt.redis);
    expect((await store.forTenant('legacy')).map((s) => s.id)).toEqual(['old-1', 'old-2']);
    expect(await store.add(legacy('new-1'), 3)).toBe(true);
    expect(await store.add(legacy('new-2'), 3)).toBe(false);
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
    // The catch-up stands for every fire time before it since the missed one.
    expect(detail.history[0].missed).toEqual({
      count: (ran - stale) / 2000,
      first: new Date(stale).toISOString(),
      last: new Date(ran - 2000).toISOString(),
    });
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await rt.schedules.fire(last.id, stale)).toBe('replayed');

    // The catch-up covers what had passed when its job was taken, not a fire time passed since:
    // that one has a job of its own (the queue planned it when it handed this one out).
    const { body: taken } = await create(ALICE, { cron: '*/2 * * * * *', overlap: 'allow', catchUp: 'last' });
    const takenAt = Math.floor(Date.now() / 2000) * 2000 - 1; // just before the latest fire time
    expect(await rt.schedules.fire(taken.id, stale, takenAt)).toBe('started');
    const covered = (await call(ALICE, 'GET', `/v1/schedules/${taken.id}`)).body.history[0].scheduledFor;
    expect(Date.parse(covered)).toBeLessThanOrEqual(takenAt);
    expect((await call(ALICE, 'DELETE', `/v1/schedules/${taken.id}`)).status).toBe(204);

    const { body: none } = await create(ALICE, { cron: '*/2 * * * * *', overlap: 'allow', catchUp: 'none' });
    expect(await rt.schedules.fire(none.id, stale)).toBe('missed');
    const [entry, ...more] = (await call(ALICE, 'GET', `/v1/schedules/${none.id}`)).body.history;
    expect(more).toEqual([]);
    // One entry for the outage, counting every fire time it swallowed (five before the latest, at least).
    expect(entry).toMatchObject({ outcome: 'missed', missed: { first: new Date(stale).toISOString() } });
    const { count, last: lastMissed } = entry.missed;
    expect(count).toBe((Date.parse(lastMissed) - stale) / 2000 + 1);
    expect(count).toBeGreaterThanOrEqual(6);
    expect(Date.parse(lastMissed)).toBeLessThanOrEqual(Date.now());
  });

  it('counts the fire times of a long outage up to a bound, and names the last exactly', async () => {
    const { body: s } = await create(ALICE, { cron: '* * * * * *', catchUp: 'none' });
    const stale = Math.floor(Date.now() / 1000) * 1000 - 3 * 3600_000; // 10 800 fire times ago
    expect(await rt.schedules.fire(s.id, stale)).toBe('missed');
    const [entry] = (await call(ALICE, 'GET', `/v1/schedules/${s.id}`)).body.history;
    expect(entry.missed).toMatchObject({ count: 10_000, capped: true, first: new Date(stale).toISOString() });
    expect(Date.parse(entry.missed.last)).toBeGreaterThanOrEqual(stale + 3 * 3600_000);
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

const auditOf = async (scheduleId: string) =>
  (
    (await call(ADMIN, 'GET', '/v1/audit?limit=1000')).body.entries as Array<{
      action: string;
      actor: string;
      subject: object;
      data?: object;
    }>
  )
    .filter((e) => (e.subject as { scheduleId?: string }).scheduleId === scheduleId)
    .map(({ action, actor, data }) => ({ action, actor, data }));

describe('who a schedule runs as, and the decision log', () => {
  it("an admin's edit makes the admin its owner: the next firing runs as the admin, and the log says who did what", async () => {
    const { body: s } = await create(ALICE, { cron: '*/2 * * * * *', overlap: 'allow' });
    const edited = await call(ADMIN, 'PATCH', `/v1/schedules/${s.id}`, { input: 'refund everything' });
    expect(edited.body).toMatchObject({ userId: 'root', input: 'refund everything' });
    const at = Math.ceil(Date.now() / 2000) * 2000;
    expect(await rt.schedules.fire(s.id, at)).toBe('started');
    expect(await rt.store.get(scheduledRunId(s.id, at))).toMatchObject({ userId: 'root', roles: ['admin'], input: 'refund everything' });
    // Alice no longer owns it: it is the admin's now.
    expect((await call(ALICE, 'GET', `/v1/schedules/${s.id}`)).status).toBe(404);
    expect((await call(ADMIN, 'DELETE', `/v1/schedules/${s.id}`)).status).toBe(204);
    expect(await auditOf(s.id)).toEqual([
      { action: 'schedule.created', actor: 'alice', data: expect.objectContaining({ cron: '*/2 * * * * *' }) },
      { action: 'schedule.updated', actor: 'root', data: { fields: ['input'], owner: 'root', previousOwner: 'alice' } },
      { action: 'schedule.deleted', actor: 'root', data: { owner: 'root' } },
    ]);
  });

  it("an admin who only disables a user's schedule leaves it theirs", async () => {
    const { body: s } = await create(ALICE, {});
    expect((await call(ADMIN, 'PATCH', `/v1/schedules/${s.id}`, { enabled: false })).body).toMatchObject({
      userId: 'alice',
      enabled: false,
    });
    expect(await auditOf(s.id)).toMatchObject([
      { action: 'schedule.created' },
      { action: 'schedule.updated', actor: 'root', data: { fields: ['enabled'], owner: 'alice' } },
    ]);
  });

  it('pauses, with the reason in its view and history, when its owner has no key any more', async () => {
    const gone: Principal = { tenantId: 'acme', userId: 'mallory', roles: ['user'] };
    const s = await rt.schedules.create(gone, {
      input: 'hi',
      cron: '*/2 * * * * *',
      timezone: 'UTC',
      overlap: 'allow',
      catchUp: 'none',
      enabled: true,
    });
    const at = Math.ceil(Date.now() / 2000) * 2000;
    expect(await rt.schedules.fire(s.id, at)).toBe('paused');
    expect(await rt.store.get(scheduledRunId(s.id, at))).toBeNull();
    const { body: detail } = await call(ADMIN, 'GET', `/v1/schedules/${s.id}`);
    expect(detail).toMatchObject({
      enabled: false,
      nextRunAt: null,
      paused: { code: 'owner_key_missing', reason: expect.stringMatching(/mallory/) },
    });
    expect(detail.history).toMatchObject([{ outcome: 'paused', reason: expect.stringMatching(/^owner_key_missing/) }]);
    expect(await rt.scheduleQueue.queue.getJobScheduler(s.id)).toBeUndefined();
    expect((await auditOf(s.id)).at(-1)).toMatchObject({ action: 'schedule.paused', actor: 'system', data: { code: 'owner_key_missing' } });
  });

  it('pauses when its owner lost a role it runs with; enabling it again runs with the roles they hold now', async () => {
    const before: Principal = { tenantId: 'acme', userId: 'alice', roles: ['user', 'approver'] };
    const s = await rt.schedules.create(before, {
      input: 'hi',
      cron: '*/2 * * * * *',
      timezone: 'UTC',
      overlap: 'allow',
      catchUp: 'none',
      enabled: true,
    });
    const at = Math.ceil(Date.now() / 2000) * 2000;
    expect(await rt.schedules.fire(s.id, at)).toBe('paused');
    expect((await call(ALICE, 'GET', `/v1/schedules/${s.id}`)).body.paused).toMatchObject({ code: 'owner_roles_changed' });
    const on = await call(ALICE, 'PATCH', `/v1/schedules/${s.id}`, { enabled: true });
    expect(on.body.enabled).toBe(true);
    expect(on.body.paused).toBeUndefined();
    expect(await rt.schedules.fire(s.id, at + 2000)).toBe('started');
    expect(await rt.store.get(scheduledRunId(s.id, at + 2000))).toMatchObject({ userId: 'alice', roles: ['user'] });
  });
});

describe('schedules owned by people who sign in through the company provider', () => {
  let signedIn: Runtime;
  beforeAll(async () => {
    signedIn = await createRuntime(
      optionsFromEnv({
        REDIS_URL: redis.url,
        REIN_API_KEYS: JSON.stringify([ALICE]),
        // Never fetched here: the test records sign-ins as the services do once a token verifies.
        REIN_OIDC_ISSUER: 'https://idp.invalid',
        REIN_OIDC_AUDIENCE: 'rein',
        LOG_LEVEL: 'silent',
      }),
      'schedules-sign-in-test',
      'producer',
      orderApp,
    );
  });
  afterAll(async () => {
    await signedIn?.close();
  });

  const dana: Principal = { tenantId: 'acme', userId: 'dana', roles: ['user', 'approver'] };
  const createAs = (owner: Principal) =>
    signedIn.schedules.create(owner, {
      input: 'hi',
      cron: '*/2 * * * * *',
      timezone: 'UTC',
      overlap: 'allow',
      catchUp: 'none',
      enabled: true,
    });
  const signInStore = () => new SignInStore(signedIn.redis);
  const nextSlot = () => Math.ceil(Date.now() / 2000) * 2000;

  it('fires as a person with no key while their latest sign-in carries its roles', async () => {
    const s = await createAs(dana);
    // The services record a verified token without waiting on Redis: wait for the record here.
    signedIn.signIns?.seen(dana);
    await vi.waitFor(async () => expect(await signInStore().get('acme', 'dana')).toMatchObject({ roles: dana.roles }));
    const at = nextSlot();
    expect(await signedIn.schedules.fire(s.id, at)).toBe('started');
    expect(await signedIn.store.get(scheduledRunId(s.id, at))).toMatchObject({ userId: 'dana', roles: dana.roles });
  });

  it('pauses when that sign-in is older than REIN_OIDC_OWNER_STANDING_MS, or no longer carries a role it runs with', async () => {
    const stale = await createAs({ ...dana, userId: 'erin' });
    await signInStore().record({ ...dana, userId: 'erin' }, Date.now() - 31 * 86_400_000);
    expect(await signedIn.schedules.fire(stale.id, nextSlot())).toBe('paused');
    expect((await signedIn.schedules.get({ ...dana, roles: ['admin'] }, stale.id)).paused).toMatchObject({ code: 'owner_signed_out' });

    const demoted = await createAs({ ...dana, userId: 'fay' });
    await signInStore().record({ ...dana, userId: 'fay', roles: ['user'] }, Date.now());
    expect(await signedIn.schedules.fire(demoted.id, nextSlot())).toBe('paused');
    expect((await signedIn.schedules.get({ ...dana, roles: ['admin'] }, demoted.id)).paused).toMatchObject({ code: 'owner_roles_changed' });

    const stranger = await createAs({ ...dana, userId: 'gus' });
    expect(await signedIn.schedules.fire(stranger.id, nextSlot())).toBe('paused');
    expect((await signedIn.schedules.get({ ...dana, roles: ['admin'] }, stranger.id)).paused).toMatchObject({ code: 'owner_key_missing' });
  });
});
