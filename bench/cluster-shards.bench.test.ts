import { isCluster } from '@rein/core/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startFleet } from '../test/support/fleet.js';
import { startTopology, type Topology } from '../test/support/topology.js';

/**
 * Steps/s of the same fleet (same workers, same total concurrency: one BullMQ worker per
 * shard, so WORKER_CONCURRENCY is split over the shards) on a local 3-master Redis
 * Cluster with the step queue in 1 shard and in 3, and the CPU each master spent (INFO
 * cpu, per node). Reported, not asserted: the machine and its neighbours decide the
 * numbers; what matters is where the Redis work lands. A fast model (BENCH_LATENCY_MS,
 * default 5) makes Redis, not the model, the thing the fleet waits on.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 48);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 5);
/** Steps one worker process runs at once, over all its shards. */
const CONCURRENCY = 12;
const INPUT = '查订单 A12345 状态，按政策说能否退'; // three model calls, two tools, no approval

let topology: Topology;
beforeAll(async () => {
  topology = await startTopology('cluster');
});
afterAll(async () => {
  await topology?.stop();
});

/** CPU seconds (user + sys) each master has used so far, by `host:port`. */
async function cpuByNode(): Promise<Map<string, number>> {
  const masters = isCluster(topology.client) ? topology.client.nodes('master') : [];
  const out = new Map<string, number>();
  for (const node of masters) {
    const info = await node.info('cpu');
    const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    out.set(`${node.options.host}:${node.options.port}`, field('used_cpu_user') + field('used_cpu_sys'));
  }
  return out;
}

async function measure(shards: number) {
  await topology.flush();
  const fleet = await startFleet({
    ...topology.fleet,
    workers: 2,
    modelLatencyMs: LATENCY_MS,
    env: { WORKER_CONCURRENCY: String(CONCURRENCY / shards), LOG_LEVEL: 'warn', REIN_QUEUE_SHARDS: String(shards) },
  });
  try {
    const before = await cpuByNode();
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) ids.push((await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: INPUT })).body.id);
    const runs = await Promise.all(ids.map((id) => fleet.waitForRun(id, (r) => ['succeeded', 'failed'].includes(r.status), 300_000)));
    const seconds = (performance.now() - started) / 1000;
    const after = await cpuByNode();
    const traces = await Promise.all(ids.map(async (id) => (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body));
    const steps = traces.reduce((sum, t) => sum + (t.steps as unknown[]).length, 0);
    const cpu = [...after].map(([node, used]) => ({ node, percent: (100 * (used - (before.get(node) ?? 0))) / seconds }));
    return { shards, succeeded: runs.filter((r) => r.status === 'succeeded').length, stepsPerSecond: steps / seconds, cpu };
  } finally {
    await fleet.stop();
  }
}

describe('cluster shard benchmark', () => {
  it('reports steps/s with 1 and 3 step-queue shards, and Redis CPU per master', async () => {
    // Alternated, so that a noisy machine weighs on both alike.
    const results = [await measure(1), await measure(3), await measure(1), await measure(3)];
    const rows = results.map((m) => ({
      shards: m.shards,
      succeeded: `${m.succeeded}/${RUNS}`,
      'steps/s': m.stepsPerSecond.toFixed(1),
      ...Object.fromEntries(m.cpu.map((c, i) => [`master ${i + 1} CPU %`, c.percent.toFixed(0)])),
    }));
    const mean = (shards: number) => {
      const of = results.filter((r) => r.shards === shards);
      return of.reduce((sum, r) => sum + r.stepsPerSecond, 0) / of.length;
    };
    console.log(`\nCluster shards: ${RUNS} runs, model latency ${LATENCY_MS} ms, 2 workers × ${CONCURRENCY} steps at once`);
    console.table(rows);
    console.log(`3 shards ÷ 1 shard, steps/s: ${(mean(3) / mean(1)).toFixed(2)}×`);
    for (const r of results) expect(r.succeeded).toBe(RUNS);
  });
});
