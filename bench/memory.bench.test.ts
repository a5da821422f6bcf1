import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../packages/core/src/adapters/model/model-gateway.js';
import { createFakeModel, startTestRedis, type TestRedis, toolCall } from '../packages/core/src/testing/index.js';
import { createHarness, USER } from '../packages/core/test/harness.js';

/**
 * Redis memory per finished run, for runs of K steps (K−1 `search_policy` calls with fresh
 * arguments, then an answer; a zero-latency fake model). Reported as ratios, never asserted:
 * memory should grow linearly with K and stay close to what the run really said: its
 * message log, its trace (as the API serves it) and its journal (decisions, snapshots and
 * the texts they refer to, as stored) in JSON. Steps run in process over the core harness,
 * so BullMQ's own job records are not part of the figure. `npm run bench`;
 * BENCH_MEMORY_RUNS tunes it.
 */
const RUNS = Number(process.env.BENCH_MEMORY_RUNS ?? 5);
const STEPS = [10, 20, 40];

let server: TestRedis;
let client: Redis;
beforeAll(async () => {
  server = await startTestRedis();
  client = new Redis(server.url);
});
afterAll(async () => {
  client.disconnect();
  await server.stop();
});

/**
 * K−1 tool calls with arguments never seen before in the run, then an answer. Calls are
 * counted per run (by its input): the prompt may summarise old turns, so it cannot say.
 */
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

const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1]);
const bytes = (values: string[]) => values.reduce((sum, v) => sum + Buffer.byteLength(v), 0);

async function keysOf(runId: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `rein:{${runId}}:*`, 'COUNT', 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found.sort();
}

/** The bytes of the values a key holds, as stored (no Redis overhead). */
async function payloadBytes(key: string): Promise<number> {
  const type = await client.type(key);
  if (type === 'list') return bytes(await client.lrange(key, 0, -1));
  if (type === 'hash') return bytes(await client.hgetall(key).then((h) => Object.entries(h).flat()));
  if (type === 'stream') return bytes((await client.xrange(key, '-', '+')).flatMap(([id, fields]) => [id, ...fields]));
  return bytes([(await client.get(key)) ?? '']);
}

async function measure(k: number) {
  await client.flushall();
  // The agent without a context policy: what is measured is how Rein stores a run, not how much a summary adds.
  const t = createHarness(server.url, kStepModel(k), { profile: { context: undefined } });
  const limits = { maxSteps: k + 1, maxTokens: 1_000_000 };
  try {
    await t.submit('warm-up', USER, limits); // the tenant's first run seeds its demo data: not part of a run's cost
    await t.drain(1000);
    const counted = async () => (await t.metrics.storedBytes.get()).values.reduce((sum, v) => sum + v.value, 0);
    const before = await usedMemory();
    const countedBefore = await counted();
    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      ids.push(await t.submit(`退款问题 ${i}`, USER, limits));
      await t.drain(1000);
    }
    const after = await usedMemory();
    const countedPerRun = ((await counted()) - countedBefore) / RUNS;
    const perKey = new Map<string, number>();
    const payload = new Map<string, number>();
    let json = 0;
    for (const id of ids) {
      const run = await t.store.require(id);
      if (run.status !== 'succeeded' || run.step !== k) throw new Error(`run ended ${run.status}/${run.reason} at step ${run.step}`);
      for (const key of await keysOf(id)) {
        const kind = key.slice(key.lastIndexOf(':') + 1);
        perKey.set(kind, (perKey.get(kind) ?? 0) + Number(await client.memory('USAGE', key, 'SAMPLES', 0)));
        payload.set(kind, (payload.get(kind) ?? 0) + (await payloadBytes(key)));
      }
      json +=
        bytes(await client.lrange(`rein:{${id}}:messages`, 0, -1)) +
        Buffer.byteLength(JSON.stringify(await t.runs.trace(USER, id))) +
        // the journal: decisions, and snapshots with the texts they refer to, as stored
        bytes(await client.hvals(`rein:{${id}}:decisions`)) +
        bytes(await client.hvals(`rein:{${id}}:snapshots`)) +
        bytes(await client.hvals(`rein:{${id}}:blobs`));
    }
    return {
      k,
      perRun: (after - before) / RUNS,
      keysPerRun: [...perKey.values()].reduce((a, b) => a + b, 0) / RUNS,
      countedPerRun,
      jsonPerRun: json / RUNS,
      perKey: Object.fromEntries([...perKey].map(([kind, n]) => [kind, Math.round(n / RUNS)])),
      payload: Object.fromEntries([...payload].map(([kind, n]) => [kind, Math.round(n / RUNS)])),
    };
  } finally {
    await t.close();
  }
}

const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;

describe('memory benchmark', () => {
  it('reports Redis memory per finished run against its length', async () => {
    const results = [];
    for (const k of STEPS) results.push(await measure(k));
    console.log(`\nMemory benchmark: ${RUNS} finished runs per length, K−1 search_policy calls then an answer`);
    console.table(
      results.map((r) => ({
        steps: r.k,
        'used_memory / run': kib(r.perRun),
        'MEMORY USAGE of its keys / run': kib(r.keysPerRun),
        'rein_stored_bytes_total / run': kib(r.countedPerRun),
        'per step': `${(r.perRun / r.k / 1024).toFixed(1)} KiB`,
        'messages+trace+journal JSON / run': kib(r.jsonPerRun),
        'memory ÷ JSON': (r.perRun / r.jsonPerRun).toFixed(2),
      })),
    );
    console.log('MEMORY USAGE by key kind, per run (bytes):');
    console.table(Object.fromEntries(results.map((r) => [`K=${r.k}`, r.perKey])));
    console.log('Stored value bytes by key kind, per run (what the keys hold, without Redis overhead):');
    console.table(Object.fromEntries(results.map((r) => [`K=${r.k}`, r.payload])));
    const [ten, , forty] = results as [(typeof results)[0], unknown, (typeof results)[0]];
    console.log(`40-step run ÷ 10-step run: ${(forty.perRun / ten.perRun).toFixed(2)}× (linear would be 4×)`);
    expect(results.every((r) => r.perRun > 0)).toBe(true); // correctness only; sizes are reported, not asserted
  }, 600_000);
});
