import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startFleet } from '../test/support/fleet.js';

/**
 * Side-by-side measurements in one run (ratios, never absolute timings as pass/fail):
 * how throughput scales from one worker to two, and how much time Rein adds to a step on
 * top of the model's own latency. `npm run bench`; BENCH_RUNS and BENCH_LATENCY_MS tune it.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 32);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 200);
const INPUT = '查订单 A12345 状态，按政策说能否退'; // three model calls, two tools, no approval

let redis: TestRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

async function measure(workers: number) {
  await client.flushall();
  const fleet = await startFleet({
    redisUrl: redis.url,
    workers,
    modelLatencyMs: LATENCY_MS,
    env: { WORKER_CONCURRENCY: '4', LOG_LEVEL: 'warn' },
  });
  try {
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) ids.push((await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: INPUT })).body.id);
    const runs = await Promise.all(ids.map((id) => fleet.waitForRun(id, (r) => ['succeeded', 'failed'].includes(r.status), 300_000)));
    const seconds = (performance.now() - started) / 1000;
    const traces = await Promise.all(ids.map(async (id) => (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body));
    const steps = traces.flatMap((t) => t.steps as Array<{ durationMs: number }>);
    return {
      workers,
      succeeded: runs.filter((r) => r.status === 'succeeded').length,
      runsPerSecond: RUNS / seconds,
      meanStepMs: steps.reduce((sum, s) => sum + s.durationMs, 0) / steps.length,
    };
  } finally {
    await fleet.stop();
  }
}

describe('fleet benchmark', () => {
  it('reports worker scaling and per-step overhead as ratios', async () => {
    const one = await measure(1);
    const two = await measure(2);
    console.log(`\nFleet benchmark: ${RUNS} runs (3 steps each), model latency ${LATENCY_MS} ms, WORKER_CONCURRENCY 4`);
    console.table([
      { workers: 1, succeeded: one.succeeded, 'runs/s': one.runsPerSecond.toFixed(2), 'mean step (ms)': one.meanStepMs.toFixed(0) },
      { workers: 2, succeeded: two.succeeded, 'runs/s': two.runsPerSecond.toFixed(2), 'mean step (ms)': two.meanStepMs.toFixed(0) },
    ]);
    console.log(`throughput, 2 workers ÷ 1 worker: ${(two.runsPerSecond / one.runsPerSecond).toFixed(2)}×`);
    console.log(`step time ÷ model latency (Rein's overhead per step): ${(one.meanStepMs / LATENCY_MS).toFixed(2)}×`);
    expect(one.succeeded + two.succeeded).toBe(2 * RUNS); // correctness only; timings are reported, not asserted
  }, 600_000);
});
