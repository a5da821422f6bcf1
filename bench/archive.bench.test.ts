import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../packages/core/src/adapters/model/model-gateway.js';
import { type ArchivePool, createArchivePool } from '../packages/core/src/adapters/postgres/archive-pool.js';
import { migrateArchive } from '../packages/core/src/adapters/postgres/migrations.js';
import { RunArchive } from '../packages/core/src/adapters/postgres/run-archive.js';
import { HotRuns } from '../packages/core/src/adapters/redis/hot-runs.js';
import {
  createFakeModel,
  startTestPostgres,
  startTestRedis,
  type TestPostgres,
  type TestRedis,
  toolCall,
} from '../packages/core/src/testing/index.js';
import { createHarness, USER } from '../packages/core/test/harness.js';

/**
 * The archive in one run: Redis memory per finished run before and after hot retention
 * drops its keys (what stays: the tenant's indexes), archive throughput (runs/s written
 * to PostgreSQL, one at a time and 8 at once) against the rate this machine finishes the
 * same runs in process (the fleet's peak finish rate cannot exceed what its workers
 * finish), and the p50 of an archived run's trace read beside the same read from Redis.
 * Reported, never asserted beyond sanity. BENCH_ARCHIVE_RUNS tunes it; `npm run bench`.
 */
const RUNS = Number(process.env.BENCH_ARCHIVE_RUNS ?? 40);
const STEPS = 10;

const db = await startTestPostgres('the archive benchmark');

const kStepModel = (k: number) => {
  const calls = new Map<string, number>();
  return createFakeModel([
    (request: ModelRequest) => {
      const input = String(request.messages.find((m) => m.role === 'user')?.content);
      const done = calls.get(input) ?? 0;
      calls.set(input, done + 1);
      return done < k - 1
        ? { content: `looking up policy ${done}`, toolCalls: [toolCall(`c${done}`, 'search_policy', { query: `退款 政策 第${done}条` })] }
        : { content: 'According to the policies found, the refund is allowed within 7 days.' };
    },
  ]);
};

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

describe.skipIf(!db)('archive benchmark', () => {
  let server: TestRedis;
  let client: Redis;
  let pool: ArchivePool;
  beforeAll(async () => {
    server = await startTestRedis();
    client = new Redis(server.url);
    pool = createArchivePool((db as TestPostgres).url, { max: 8 });
    await migrateArchive(pool);
  });
  afterAll(async () => {
    client?.disconnect();
    await pool?.end();
    await server?.stop();
    await db?.stop();
  });

  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1]);

  it('reports memory per run after hot retention, archive throughput and archived trace reads', async () => {
    await client.flushall();
    const t = createHarness(server.url, kStepModel(STEPS), { profile: { context: undefined } });
    const limits = { maxSteps: STEPS + 1, maxTokens: 1_000_000 };
    try {
      await t.submit('warm-up', USER, limits);
      await t.drain(1000);
      const before = await usedMemory();
      const ids: string[] = [];
      const finishStart = performance.now();
      for (let i = 0; i < RUNS; i++) {
        ids.push(await t.submit(`退款问题 ${i}`, USER, limits));
        await t.drain(1000);
      }
      const finishRate = RUNS / ((performance.now() - finishStart) / 1000);
      const hotMemory = (await usedMemory()) - before;

      const hot = new HotRuns(t.redis, t.store);
      const archive = new RunArchive(pool);
      const snapshots = await Promise.all(ids.map((id) => hot.snapshot(id)));
      const half = RUNS / 2;
      let started = performance.now();
      for (const s of snapshots.slice(0, half)) await archive.archiveRun(s!);
      const serialRate = half / ((performance.now() - started) / 1000);
      started = performance.now();
      const rest = snapshots.slice(half);
      for (let i = 0; i < rest.length; i += 8) await Promise.all(rest.slice(i, i + 8).map((s) => archive.archiveRun(s!)));
      const parallelRate = rest.length / ((performance.now() - started) / 1000);

      const redisReads: number[] = [];
      const archiveReads: number[] = [];
      for (const id of ids) {
        let at = performance.now();
        await Promise.all([t.store.get(id), t.store.steps(id), t.store.approvals(id)]);
        redisReads.push(performance.now() - at);
        at = performance.now();
        const trace = await archive.readTrace(USER.tenantId, id);
        archiveReads.push(performance.now() - at);
        expect(trace?.steps).toHaveLength(STEPS);
      }

      for (const s of snapshots) await hot.archived(s!.run, s!.revision);
      for (const s of snapshots) expect(await hot.drop(s!.run.id, s!.events.at(-1)?.id)).toBe(true);
      const coldMemory = (await usedMemory()) - before;
      const { rows } = await pool.query<{ bytes: string }>(
        `SELECT (pg_total_relation_size('rein.runs') + pg_total_relation_size('rein.steps') + pg_total_relation_size('rein.tool_calls')
          + pg_total_relation_size('rein.approvals') + pg_total_relation_size('rein.events'))::text AS bytes`,
      );
      const pgPerRun = Number(rows[0]?.bytes) / (RUNS + 0);

      console.log(`\nArchive benchmark: ${RUNS} finished runs of ${STEPS} steps (zero-latency fake model, in process)`);
      console.table([
        { measure: 'Redis memory per finished run, hot', value: `${(hotMemory / RUNS / 1024).toFixed(1)} KiB` },
        { measure: 'Redis memory per finished run, after hot retention', value: `${(coldMemory / RUNS).toFixed(0)} B` },
        { measure: 'after ÷ hot', value: (coldMemory / hotMemory).toFixed(4) },
        { measure: 'PostgreSQL per archived run (tables + indexes)', value: `${(pgPerRun / 1024).toFixed(1)} KiB` },
        { measure: 'finish rate of this machine (runs/s)', value: finishRate.toFixed(1) },
        { measure: 'archive writes, one at a time (runs/s)', value: serialRate.toFixed(1) },
        { measure: 'archive writes, 8 at once (runs/s)', value: parallelRate.toFixed(1) },
        { measure: 'archive throughput ÷ finish rate (8 at once)', value: (parallelRate / finishRate).toFixed(1) },
        { measure: 'trace read p50, Redis (ms)', value: p50(redisReads).toFixed(2) },
        { measure: 'trace read p50, archive (ms)', value: p50(archiveReads).toFixed(2) },
      ]);
      expect(coldMemory).toBeLessThan(hotMemory);
    } finally {
      await t.close();
    }
  });
});
