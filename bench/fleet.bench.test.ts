import { type OtlpReceiver, startOtlpReceiver, startTestRedis, type TestRedis } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startFleet } from '../test/support/fleet.js';

/**
 * Side-by-side measurements in one run (ratios, never absolute timings as pass/fail):
 * how throughput scales from one worker to two, how much time Rein adds to a step on
 * top of the model's own latency, and what exporting traces (OTLP to an in-process
 * receiver) costs against tracing off. `npm run bench`; BENCH_RUNS and BENCH_LATENCY_MS tune it.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 32);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 200);
const INPUT = '查订单 A12345 状态，按政策说能否退'; // three model calls, two tools, no approval

let redis: TestRedis;
let client: Redis;
let receiver: OtlpReceiver;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
  await receiver.close();
});

async function measure(workers: number, env: Record<string, string> = {}) {
  await client.flushall();
  const fleet = await startFleet({
    redisUrl: redis.url,
    workers,
    modelLatencyMs: LATENCY_MS,
    env: { WORKER_CONCURRENCY: '4', LOG_LEVEL: 'warn', ...env },
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
  it('reports worker scaling, per-step overhead and the cost of tracing as ratios', async () => {
    const one = await measure(1);
    // Tracing off and on alternate, so that a noisy machine weighs on both alike.
    const tracingOn = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '500' };
    const offA = await measure(2);
    const onA = await measure(2, tracingOn);
    const offB = await measure(2);
    const onB = await measure(2, tracingOn);
    const mean = (a: Awaited<ReturnType<typeof measure>>, b: Awaited<ReturnType<typeof measure>>) => ({
      workers: 2,
      succeeded: a.succeeded + b.succeeded,
      runsPerSecond: (a.runsPerSecond + b.runsPerSecond) / 2,
      meanStepMs: (a.meanStepMs + b.meanStepMs) / 2,
    });
    const two = mean(offA, offB);
    const traced = mean(onA, onB);
    const row = (label: string, m: Awaited<ReturnType<typeof measure>>) => ({
      fleet: label,
      succeeded: m.succeeded,
      'runs/s': m.runsPerSecond.toFixed(2),
      'mean step (ms)': m.meanStepMs.toFixed(0),
    });
    console.log(
      `\nFleet benchmark: ${RUNS} runs (3 steps each), model latency ${LATENCY_MS} ms, WORKER_CONCURRENCY 4; 2-worker rows: mean of two fleets`,
    );
    console.table([row('1 worker', one), row('2 workers', two), row('2 workers, tracing on', traced)]);
    console.log(`throughput, 2 workers ÷ 1 worker: ${(two.runsPerSecond / one.runsPerSecond).toFixed(2)}×`);
    console.log(`step time ÷ model latency (Rein's overhead per step): ${(one.meanStepMs / LATENCY_MS).toFixed(2)}×`);
    const pairs = [
      [offA, onA],
      [offB, onB],
    ] as const;
    const perPair = pairs.map(([off, on]) => `${(on.runsPerSecond / off.runsPerSecond).toFixed(2)}×`).join(', ');
    console.log(
      `tracing on ÷ off (2 workers, ${receiver.spans.length} spans exported): throughput ${(traced.runsPerSecond / two.runsPerSecond).toFixed(2)}× ` +
        `(per pair ${perPair}), step time ${(traced.meanStepMs / two.meanStepMs).toFixed(2)}×`,
    );
    expect(one.succeeded + two.succeeded + traced.succeeded).toBe(5 * RUNS); // correctness only; timings are reported, not asserted
    expect(receiver.spans.length).toBeGreaterThan(0);
  }, 900_000);
});
