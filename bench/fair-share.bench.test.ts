import { startTestRedis } from '@rein/core/testing';
import { describe, expect, it } from 'vitest';
import { KEYS, startFleet } from '../test/support/fleet.js';

/**
 * Fair share: the start delay (submission until its first step is taken) of a light
 * tenant's runs while a heavy tenant floods the fleet, without fair share (every heavy run
 * gets its step job at once, and the light tenant's wait behind them in the step queue) and
 * with it (`queueBeyondLimit` and `fairShareSlots` equal to the fleet's steps at once: a
 * light run takes the next freed slot). Reported, not asserted: the machine decides the
 * numbers; the p95 with fair share should stay near one run's length whatever the flood.
 */
const FLOOD = Number(process.env.BENCH_FLOOD ?? 200);
const LIGHT = Number(process.env.BENCH_LIGHT ?? 10);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 50);
/** Steps the one worker runs at once: the fleet's slots. */
const CONCURRENCY = 4;
const INPUT = 'What is your return policy?';
const quota = { maxConcurrentRuns: 10_000, tokensPerDay: 1_000_000_000, costPerDayUsd: 1_000_000 };

const p = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;

async function measure(fair: boolean) {
  const redis = await startTestRedis();
  const quotas = fair
    ? { default: { ...quota, queueBeyondLimit: true }, tenants: {}, fairShareSlots: CONCURRENCY }
    : { default: quota, tenants: {} };
  const fleet = await startFleet({
    redisUrl: redis.url,
    workers: 1,
    modelLatencyMs: LATENCY_MS,
    env: { WORKER_CONCURRENCY: String(CONCURRENCY), REIN_TENANT_QUOTAS: JSON.stringify(quotas) },
  });
  try {
    const flood = await Promise.all(
      Array.from(
        { length: FLOOD },
        async () => (await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: INPUT })).body.id as string,
      ),
    );
    const delays: number[] = [];
    // One light run at a time, each submitted once the one before it started.
    for (let i = 0; i < LIGHT; i++) {
      const submitted = performance.now();
      const { id } = (await fleet.callApi('POST', '/v1/runs', KEYS.other.key, { input: INPUT })).body;
      // Polled as the light tenant (the fleet's helper reads as the heavy one).
      for (;;) {
        const run = (await fleet.callApi('GET', `/v1/runs/${id}`, KEYS.other.key)).body;
        if (run.status !== 'queued' || run.step > 0) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      delays.push(performance.now() - submitted);
    }
    await Promise.all(flood.map((id) => fleet.waitForRun(id, (r) => ['succeeded', 'failed'].includes(r.status), 600_000)));
    const sorted = [...delays].sort((a, b) => a - b);
    return { fair, p50: p(sorted, 0.5), p95: p(sorted, 0.95), max: sorted.at(-1) ?? Number.NaN };
  } finally {
    await fleet.stop();
    await redis.stop();
  }
}

describe('fair share benchmark', () => {
  it("reports the light tenant's p95 start delay while a heavy tenant floods, without and with fair share", async () => {
    const results = [await measure(false), await measure(true)];
    console.log(
      `\nFair share: heavy tenant floods ${FLOOD} runs, light tenant submits ${LIGHT}; 1 worker × ${CONCURRENCY} steps, model ${LATENCY_MS} ms`,
    );
    console.table(
      results.map((r) => ({
        'fair share': r.fair ? `on (fairShareSlots ${CONCURRENCY})` : 'off',
        'p50 start delay ms': r.p50.toFixed(0),
        'p95 start delay ms': r.p95.toFixed(0),
        'max ms': r.max.toFixed(0),
      })),
    );
    for (const r of results) expect(r.p95).toBeGreaterThan(0);
  }, 1_200_000);
});
