import { optionsFromEnv, type Principal } from '@rein/core';
import { ARCHIVE_BACKLOG_KEY, createArchivePool, createRuntime, migrateArchive, type Runtime, runKeys } from '@rein/core/internal';
import { createFakeModel, hasPostgresBinaries, LocalPostgres, startTestRedis, type TestRedis, toolCall } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import { startWorker } from '@rein/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const RUNS = Number(process.env.ARCHIVE_CHAOS_RUNS ?? 30);
const USER: Principal = { tenantId: 'acme', userId: 'alice', roles: ['user'] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * PostgreSQL stopped and restarted under load (a server of its own on a free port): runs
 * keep running and finishing while it is down, their keys stay in Redis (hot retention
 * is short, and drops nothing the archive has not confirmed), and once it is back the
 * archive catches up — every run archived exactly once — and only then do keys go.
 */
describe.skipIf(!hasPostgresBinaries('the archive outage scenario'))('chaos: the archive’s PostgreSQL down under load', () => {
  let pg: LocalPostgres;
  let redis: TestRedis;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let rt: Runtime;

  beforeAll(async () => {
    pg = await LocalPostgres.start();
    redis = await startTestRedis();
    const pool = createArchivePool(pg.url);
    await migrateArchive(pool);
    await pool.end();
    const env = {
      REDIS_URL: redis.url,
      REIN_ARCHIVE_URL: pg.url,
      REIN_HOT_RETENTION_MS: '1000',
      REIN_REAPER_INTERVAL_MS: '300',
      REIN_REAPER_STALE_MS: '500',
      LOG_LEVEL: 'silent',
      WORKER_METRICS_PORT: '0',
      REIN_BIND_HOST: '127.0.0.1',
      REIN_API_KEYS: JSON.stringify([{ key: 'chaos-archive-key', ...USER }]),
    };
    const model = createFakeModel([
      (req) =>
        req.messages.some((m) => m.role === 'tool')
          ? { content: 'Order 2024001 has shipped.' }
          : { toolCalls: [toolCall('c1', 'query_order', { orderNo: '2024001' })] },
    ]);
    worker = await startWorker(orderApp, { options: optionsFromEnv(env), handleSignals: false, model: () => model });
    rt = await createRuntime(optionsFromEnv(env), 'chaos-api', 'producer', orderApp);
  });
  afterAll(async () => {
    await rt?.close();
    await worker?.close();
    await redis?.stop();
    await pg?.stop();
  });

  const status = async (id: string) => (await rt.store.get(id))?.status;

  it('runs finish while it is down, nothing is dropped unarchived, and every run is archived once after it returns', async () => {
    const ids: string[] = [];
    const submit = async () => ids.push((await rt.runs.submit(USER, { input: `订单 2024001 #${ids.length}` })).run.id);
    for (let i = 0; i < RUNS / 3; i++) await submit();
    await pg.kill();
    const downAt = Date.now();
    for (let i = ids.length; i < RUNS; i++) await submit();
    // Runs keep running and finishing with the archive down.
    await expect.poll(async () => (await Promise.all(ids.map(status))).every((s) => s === 'succeeded'), { timeout: 60_000 }).toBe(true);
    await sleep(Math.max(0, 3_000 - (Date.now() - downAt))); // a few reaper passes and hot-retention periods
    const backlog = await rt.redis.zcard(ARCHIVE_BACKLOG_KEY);
    expect(backlog).toBeGreaterThan(0);
    // Whatever the archive did not confirm is still in Redis, and read from there.
    for (const id of await rt.redis.zrange(ARCHIVE_BACKLOG_KEY, 0, -1)) {
      expect(await rt.redis.exists(runKeys(id).run)).toBe(1);
      expect((await rt.runs.get(USER, id)).status).toBe('succeeded');
    }

    await pg.start();
    await expect.poll(() => rt.redis.zcard(ARCHIVE_BACKLOG_KEY), { timeout: 90_000, interval: 500 }).toBe(0);
    const { rows } = await rt.archive!.pool.query('SELECT id, count(*) OVER (PARTITION BY id)::int AS n FROM rein.runs');
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(rows.every((r) => r.n === 1)).toBe(true);
    // Hot retention now drops the keys, and every run still reads the same from the archive.
    await expect
      .poll(async () => (await Promise.all(ids.map((id) => rt.redis.exists(runKeys(id).run)))).every((n) => n === 0), { timeout: 30_000 })
      .toBe(true);
    for (const id of ids) expect((await rt.runs.trace(USER, id)).steps).toHaveLength(2);
    process.stdout.write(`archive outage: ${RUNS} runs, backlog ${backlog} while down, all archived once after the restart\n`);
  });
});
