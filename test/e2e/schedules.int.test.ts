import type { RunView, ScheduleDetail } from '@rein/client';
import { LocalRedis, waitForPort } from '@rein/core/testing';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

const INPUT = '支持 7 天无理由退货吗？';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw call to one of the fleet's API processes. */
async function call(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEYS.user.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Every run a schedule started, read through the runs list (all of the user's runs, filtered by metadata.scheduleId). */
async function runsOf(fleet: Fleet, scheduleId: string): Promise<RunView[]> {
  const { body } = await call(fleet.api, 'GET', '/v1/runs?limit=200');
  return (body.runs as RunView[]).filter((r) => r.metadata.scheduleId === scheduleId);
}

const detail = async (fleet: Fleet, id: string): Promise<ScheduleDetail> => (await call(fleet.api, 'GET', `/v1/schedules/${id}`)).body;

let redis: LocalRedis | undefined;
let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  await redis?.stop();
  redis = undefined;
});
afterAll(async () => {
  await fleet?.stop();
  await redis?.stop();
});

describe('schedules, on a fleet of processes', () => {
  it('a schedule every 2 s fires once per firing with two workers and two API processes for 10 s', async () => {
    redis = await LocalRedis.start();
    fleet = await startFleet({ redisUrl: redis.url, workers: 2, apis: 2 });
    const [api1, api2] = fleet.apis as [string, string];
    const created = await call(api1, 'POST', '/v1/schedules', { input: INPUT, cron: '*/2 * * * * *', overlap: 'allow' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await sleep(5_000);
    // Another replica upserts the same schedule while it fires (as every replica may).
    expect((await call(api2, 'PATCH', `/v1/schedules/${id}`, { cron: '*/2 * * * * *' })).status).toBe(200);
    await sleep(5_000);
    expect((await call(api2, 'PATCH', `/v1/schedules/${id}`, { enabled: false })).body).toMatchObject({ enabled: false, nextRunAt: null });
    await sleep(1_000);

    const runs = await runsOf(fleet, id);
    const fireTimes = runs.map((r) => String(r.metadata.scheduledFor));
    expect(new Set(fireTimes).size).toBe(runs.length); // one run per firing
    expect(runs.length).toBeGreaterThanOrEqual(4);
    expect(runs.length).toBeLessThanOrEqual(6);
    for (const t of fireTimes) expect(Date.parse(t) % 2000).toBe(0);
    const started = (await detail(fleet, id)).history.filter((f) => f.outcome === 'started');
    expect(started.map((f) => f.runId).sort()).toEqual(runs.map((r) => r.id).sort());
    // Owned by the creator; they finish like any run.
    for (const r of runs) await fleet.waitForRun(r.id, (v) => v.status === 'succeeded');
    expect(runs.every((r) => r.metadata.scheduleId === id)).toBe(true);
  }, 120_000);

  it('overlap skip: a slow agent keeps the next firings from starting, and the history says so', async () => {
    redis = await LocalRedis.start();
    fleet = await startFleet({ redisUrl: redis.url, workers: 2, modelLatencyMs: 2_500 });
    const { body: s } = await call(fleet.api, 'POST', '/v1/schedules', { input: INPUT, cron: '*/1 * * * * *', overlap: 'skip' });
    await sleep(8_000);
    await call(fleet.api, 'PATCH', `/v1/schedules/${s.id}`, { enabled: false });
    const { history } = await detail(fleet, s.id);
    const skipped = history.filter((f) => f.outcome === 'skipped');
    expect(skipped.length).toBeGreaterThan(0);
    const runs = await runsOf(fleet, s.id);
    for (const f of skipped) expect(runs.map((r) => r.id)).toContain(f.runId);
    // No two runs of the schedule were active at once: each started after the one before it finished.
    const done = await Promise.all(runs.map((r) => fleet?.waitForRun(r.id, (v) => v.status === 'succeeded') as Promise<RunView>));
    const byStart = done.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    for (let i = 1; i < byStart.length; i++)
      expect(Date.parse(byStart[i]?.createdAt ?? '')).toBeGreaterThanOrEqual(Date.parse(byStart[i - 1]?.updatedAt ?? ''));
  }, 120_000);

  it('after a worker and Redis restart mid-schedule, catchUp last runs one missed firing and catchUp none runs none', async () => {
    redis = await LocalRedis.start({ appendOnly: true });
    fleet = await startFleet({ redisUrl: redis.url, workers: 1 });
    const make = async (catchUp: 'last' | 'none') =>
      (await call(fleet?.api ?? '', 'POST', '/v1/schedules', { input: INPUT, cron: '*/2 * * * * *', overlap: 'allow', catchUp })).body
        .id as string;
    const last = await make('last');
    const none = await make('none');
    await sleep(4_500);
    // The only worker dies, and Redis restarts (with its data) while it is away, for more than one interval.
    const worker = fleet.workers[0];
    worker?.kill('SIGKILL');
    const down = Date.now();
    await redis.shutdown();
    await sleep(2_000);
    await redis.start();
    await sleep(3_000);
    await fleet.startWorker();
    // A loaded machine takes a while to start a worker: count from when it is up.
    await waitForPort(fleet.workerMetricsPorts.at(-1) ?? 0, 60_000);
    await sleep(6_000);
    for (const id of [last, none]) await call(fleet.api, 'PATCH', `/v1/schedules/${id}`, { enabled: false });

    const lastHistory = (await detail(fleet, last)).history;
    const noneHistory = (await detail(fleet, none)).history;
    // catchUp none: the firing due in the outage is recorded as missed, and no run was started for it.
    const missed = noneHistory.filter((f) => f.outcome === 'missed');
    expect(missed).toHaveLength(1);
    expect(Date.parse(missed[0]?.scheduledFor ?? '')).toBeGreaterThanOrEqual(down - 2_000);
    expect(noneHistory.filter((f) => f.outcome === 'started' && /catch-up/.test(f.reason ?? ''))).toEqual([]);
    // catchUp last: one run for what was missed, then the schedule goes on; nothing is recorded missed.
    expect(lastHistory.filter((f) => f.outcome === 'missed')).toEqual([]);
    expect(lastHistory.filter((f) => f.outcome === 'started' && /catch-up/.test(f.reason ?? ''))).toHaveLength(1);
    for (const h of [lastHistory, noneHistory]) {
      const after = h.filter((f) => f.outcome === 'started' && Date.parse(f.at) > down);
      expect(after.length).toBeGreaterThanOrEqual(2); // both fire again once the fleet is back
    }
    for (const id of [last, none]) {
      const runs = await runsOf(fleet, id);
      expect(new Set(runs.map((r) => r.metadata.scheduledFor)).size).toBe(runs.length);
    }
  }, 120_000);
});
