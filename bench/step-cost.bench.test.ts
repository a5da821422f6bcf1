import { readFileSync } from 'node:fs';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startFleet } from '../test/support/fleet.js';
import { benchInput, percentile, type StepFake, startStepFake, stepIntervals } from './step-fake.js';

/**
 * What one ReAct step costs, side by side in one run on the same zero-latency fake model
 * (`npm run bench`; see docs/performance.md): the raw fetch loop (the floor), a naive
 * BullMQ job-per-step design (history as one JSON key), and Rein's fleet. Redis figures
 * come from INFO deltas of a dedicated redis-server, so commands inside Lua count.
 * Reported, never asserted: only correctness is checked.
 */
const SEQ_RUNS = Number(process.env.BENCH_SEQ_RUNS ?? 20);
const BURST_RUNS = Number(process.env.BENCH_BURST_RUNS ?? 200);
const RSS_RUNS = Number(process.env.BENCH_RSS_RUNS ?? 1000);
const CONCURRENCY = 16;
/** A directory: each worker writes a V8 CPU profile there when it stops (open it in Chrome DevTools). */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF_DIR;

let redis: TestRedis;
let client: Redis;
let fake: StepFake;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  fake = await startStepFake();
});
afterAll(async () => {
  client.disconnect();
  await fake.close();
  await redis.stop();
});

/**
 * Server-side totals: commands executed (Lua-internal ones included), CPU seconds, and
 * reads processed — each a batch of commands a client sent at once (a round trip's
 * request), which is what Redis spends its per-call CPU on.
 */
async function serverStats(): Promise<{
  commands: number;
  cpu: number;
  reads: number;
  byCommand: Map<string, { calls: number; usec: number }>;
}> {
  const stats = await client.info('commandstats');
  let commands = 0;
  const byCommand = new Map<string, { calls: number; usec: number }>();
  for (const m of stats.matchAll(/^cmdstat_(\S+?):calls=(\d+),usec=(\d+)/gm)) {
    if (m[1] === 'info') continue;
    commands += Number(m[2]);
    byCommand.set(m[1] as string, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  const cpu = await client.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  const reads = Number(/^total_reads_processed:(\d+)/m.exec(await client.info('stats'))?.[1] ?? 0);
  return { commands, cpu: field('used_cpu_sys') + field('used_cpu_user'), reads, byCommand };
}

interface Row {
  system: string;
  steps: number[];
  commandsPerStep?: number;
  cpuUsPerStep?: number;
  readsPerStep?: number;
  /** Commands per step by name, most frequent first, with the µs Redis spent in each (a script's own commands count in both). */
  mix?: string;
}

/** Measures `body` (which makes `steps` model calls in all) with Redis INFO deltas. */
async function withRedisCost(steps: number, body: () => Promise<void>) {
  const before = await serverStats();
  await body();
  const after = await serverStats();
  const mix = [...after.byCommand]
    .map(([name, { calls, usec }]) => {
      const was = before.byCommand.get(name) ?? { calls: 0, usec: 0 };
      return { name, perStep: (calls - was.calls) / steps, usPerStep: (usec - was.usec) / steps };
    })
    .filter(({ perStep }) => perStep >= 0.05)
    .sort((a, b) => b.perStep - a.perStep)
    .map(({ name, perStep, usPerStep }) => `${name} ${perStep.toFixed(1)} (${usPerStep.toFixed(0)} µs)`)
    .join(', ');
  return {
    mix,
    commandsPerStep: (after.commands - before.commands) / steps,
    // The bench's own INFO calls (three per sample) are not the system's.
    readsPerStep: (after.reads - before.reads - 3) / steps,
    cpuUsPerStep: ((after.cpu - before.cpu) * 1e6) / steps,
  };
}

async function complete(messages: unknown[]) {
  const res = await fetch(`${fake.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench-fake', messages }),
  });
  return (await res.json()) as { choices: Array<{ message: { content: string | null; tool_calls?: Array<{ id: string }> } }> };
}

/** The floor: one process, a while loop, history in memory. */
async function rawLoop(k: number): Promise<Row> {
  fake.reset();
  for (let r = 0; r < SEQ_RUNS; r++) {
    const messages: unknown[] = [{ role: 'user', content: benchInput(`raw-${r}`, k) }];
    for (;;) {
      const { message } = (await complete(messages)).choices[0] as {
        message: { content: string | null; tool_calls?: Array<{ id: string }> };
      };
      messages.push(message);
      if (!message.tool_calls?.length) break;
      for (const c of message.tool_calls) messages.push({ role: 'tool', tool_call_id: c.id, content: 'policy text' });
    }
  }
  return { system: 'raw fetch loop', steps: stepIntervals(fake.arrivals) };
}

/**
 * A naive queue design: one BullMQ job per step, the history as one JSON string key.
 * `burst`: that many runs submitted at once (saturation) instead of `SEQ_RUNS` one after
 * another. Its worker runs in this process, beside the fake model.
 */
async function naiveBullmq(k: number, burst = 0): Promise<Row & { stepsPerSecond: number }> {
  fake.reset();
  await client.flushall();
  const queue = new Queue('naive', { connection: { url: redis.url } });
  const worker = new Worker(
    'naive',
    async (job) => {
      const { tag, step } = job.data as { tag: string; step: number };
      const key = `naive:${tag}`;
      const messages = JSON.parse((await client.get(key)) ?? '[]') as unknown[];
      const { message } = (await complete(messages)).choices[0] as {
        message: { content: string | null; tool_calls?: Array<{ id: string }> };
      };
      messages.push(message);
      for (const c of message.tool_calls ?? []) messages.push({ role: 'tool', tool_call_id: c.id, content: 'policy text' });
      await client.set(key, JSON.stringify(messages));
      if (message.tool_calls?.length)
        await queue.add('step', { tag, step: step + 1 }, { jobId: `${tag}-${step + 1}`, removeOnComplete: true });
    },
    { connection: { url: redis.url, maxRetriesPerRequest: null }, concurrency: CONCURRENCY },
  );
  const start = async (tag: string) => {
    await client.set(`naive:${tag}`, JSON.stringify([{ role: 'user', content: benchInput(tag, k) }]));
    await queue.add('step', { tag, step: 0 }, { jobId: `${tag}-0`, removeOnComplete: true });
  };
  try {
    const runs = burst || SEQ_RUNS;
    const started = performance.now();
    const cost = await withRedisCost(runs * k, async () => {
      if (burst) {
        const tags = Array.from({ length: burst }, (_, i) => `naive-burst-${i}`);
        await Promise.all(tags.map(start));
        await Promise.all(tags.map((tag) => fake.answered(tag)));
        return;
      }
      for (let r = 0; r < runs; r++) {
        await start(`naive-${r}`);
        await fake.answered(`naive-${r}`);
      }
    });
    const stepsPerSecond = (runs * k) / ((performance.now() - started) / 1000);
    return { system: 'naive BullMQ job-per-step', steps: stepIntervals(fake.arrivals), stepsPerSecond, ...cost };
  } finally {
    await worker.close();
    await queue.close();
  }
}

const fleetEnv = {
  WORKER_CONCURRENCY: String(CONCURRENCY),
  LOG_LEVEL: 'warn',
  REIN_TENANT_QUOTAS: JSON.stringify({ default: { maxConcurrentRuns: 10_000, tokensPerDay: 1e12, costPerDayUsd: 1e9 } }),
};

async function submit(fleet: Awaited<ReturnType<typeof startFleet>>, tag: string, k: number) {
  const res = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, {
    input: benchInput(tag, k),
    limits: { maxSteps: k + 2, maxTokens: 1_000_000, timeoutMs: 600_000 },
  });
  if (res.status !== 202) throw new Error(`submit failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

/** The same endpoint with streaming declared unsupported: replies arrive whole, no `model.delta` events. */
const notStreamed = () => ({ REIN_PROVIDERS: JSON.stringify({ openai: { baseURL: fake.url, supportsStreaming: false } }) });

async function withFleet<T>(
  workers: number,
  body: (fleet: Awaited<ReturnType<typeof startFleet>>) => Promise<T>,
  env: Record<string, string> = {},
): Promise<T> {
  await client.flushall();
  fake.reset();
  const fleet = await startFleet({
    redisUrl: redis.url,
    workers,
    env: { ...fleetEnv, OPENAI_BASE_URL: fake.url, ...env },
    ...(CPU_PROF_DIR ? { workerNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] } : {}),
  });
  try {
    return await body(fleet);
  } finally {
    await fleet.stop();
  }
}

/**
 * A fleet mid-deploy, as versions see it: this fleet's version (v2) promoted, and an older
 * one (v1, an API process still running it) being upgraded to it, so every job is routed
 * through a non-trivial fleet version state. The state is refreshed in the background:
 * a step should cost what it costs on a fleet with one version.
 */
const MID_DEPLOY = { env: { REIN_APP_VERSION: 'v2' }, label: 'v2 promoted, v1 → v2 upgrading' };
async function midDeploy(fleet: Awaited<ReturnType<typeof startFleet>>) {
  await fleet.startApi({ REIN_APP_VERSION: 'v1' });
  for (let i = 0; ; i++) {
    const promoted = await fleet.callApi('POST', '/v1/versions/v2/promote', KEYS.admin.key, {});
    if (promoted.status === 200) break;
    if (i > 100) throw new Error(`promote failed: ${promoted.status} ${JSON.stringify(promoted.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const upgrade = await fleet.callApi('POST', '/v1/versions/v1/upgrade', KEYS.admin.key, { to: 'v2' });
  if (upgrade.status !== 202) throw new Error(`upgrade failed: ${upgrade.status} ${JSON.stringify(upgrade.body)}`);
}

/** Rein, one run at a time: per-step latency and Redis cost. `deploy`: measured mid-deploy (MID_DEPLOY). */
async function reinSequential(k: number, runs = SEQ_RUNS, streamed = true, deploy = false): Promise<Row> {
  return withFleet(
    1,
    async (fleet) => {
      if (deploy) await midDeploy(fleet);
      await fleet.waitForRun(await submit(fleet, 'warmup', k), (r) => r.status === 'succeeded');
      fake.reset();
      const ids: string[] = [];
      const cost = await withRedisCost(runs * k, async () => {
        for (let r = 0; r < runs; r++) {
          ids.push(await submit(fleet, `rein-${k}-${r}`, k));
          await fake.answered(`rein-${k}-${r}`);
        }
        await fleet.waitForRun(ids.at(-1) as string, (run) => run.status === 'succeeded');
      });
      const runsDone = await Promise.all(
        ids.map((id) => fleet.waitForRun(id, (run) => run.status !== 'running' && run.status !== 'queued')),
      );
      expect(runsDone.every((run) => run.status === 'succeeded')).toBe(true);
      const variant = `${streamed ? '' : ', not streamed'}${deploy ? `, ${MID_DEPLOY.label}` : ''}`;
      return { system: `Rein (K=${k})${variant}`, steps: stepIntervals(fake.arrivals), ...cost };
    },
    { ...(streamed ? {} : notStreamed()), ...(deploy ? MID_DEPLOY.env : {}) },
  );
}

/** Rein at saturation: `BURST_RUNS` runs of 10 steps submitted at once. */
async function reinBurst(workers: number) {
  return withFleet(workers, async (fleet) => {
    const tags = Array.from({ length: BURST_RUNS }, (_, i) => `burst-${workers}-${i}`);
    const started = performance.now();
    const cost = await withRedisCost(BURST_RUNS * 10, async () => {
      await Promise.all(tags.map((tag) => submit(fleet, tag, 10)));
      await Promise.all(tags.map((tag) => fake.answered(tag)));
    });
    const seconds = (performance.now() - started) / 1000;
    return { workers, stepsPerSecond: (BURST_RUNS * 10) / seconds, ...cost };
  });
}

/** Peak resident memory of one worker while `RSS_RUNS` runs are active. */
async function reinRss() {
  return withFleet(1, async (fleet) => {
    const pid = fleet.workers[0]?.pid as number;
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    const idle = rss();
    let peak = idle;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss());
    }, 100);
    const tags = Array.from({ length: RSS_RUNS }, (_, i) => `rss-${i}`);
    for (let i = 0; i < tags.length; i += 50) await Promise.all(tags.slice(i, i + 50).map((tag) => submit(fleet, tag, 10)));
    await Promise.all(tags.map((tag) => fake.answered(tag)));
    clearInterval(sampler);
    return { idleMb: idle, peakMb: peak };
  });
}

const ms = (v: number) => v.toFixed(2);

describe('step cost benchmark', () => {
  it('reports per-step latency, Redis cost, throughput and memory side by side', async () => {
    const raw = await rawLoop(10);
    const naive = await naiveBullmq(10);
    const rein = await reinSequential(10);
    const rein40 = await reinSequential(40, Math.max(2, Math.round(SEQ_RUNS / 4)));
    const whole = await reinSequential(10, SEQ_RUNS, false);
    const floor = percentile(raw.steps, 50);
    const floor99 = percentile(raw.steps, 99);
    console.log(`\nStep cost: sequential runs (${SEQ_RUNS} × K=10; K=40 with a quarter as many), zero-latency fake model`);
    console.table(
      [raw, naive, rein, rein40, whole].map((row) => ({
        system: row.system,
        'step p50 (ms)': ms(percentile(row.steps, 50)),
        'step p99 (ms)': ms(percentile(row.steps, 99)),
        'Δp50 vs raw': ms(percentile(row.steps, 50) - floor),
        'Δp99 vs raw': ms(percentile(row.steps, 99) - floor99),
        'Redis cmds/step': row.commandsPerStep?.toFixed(1) ?? '–',
        'Redis reads/step': row.readsPerStep?.toFixed(1) ?? '–',
        'Redis CPU/step (µs)': row.cpuUsPerStep?.toFixed(0) ?? '–',
      })),
    );
    console.log(`Redis commands per step, naive: ${naive.mix}`);
    console.log(`Redis commands per step, Rein: ${rein.mix}`);
    console.log(`Redis commands per step, Rein not streamed: ${whole.mix}`);
    if (rein.commandsPerStep && whole.commandsPerStep) {
      console.log(
        `Streaming adds ${(rein.commandsPerStep - whole.commandsPerStep).toFixed(1)} Redis commands per step (model.delta batches)`,
      );
    }
    if (naive.commandsPerStep && rein.commandsPerStep) {
      console.log(`Rein ÷ naive, Redis commands per step: ${(rein.commandsPerStep / naive.commandsPerStep).toFixed(2)}×`);
    }
    if (naive.readsPerStep && rein.readsPerStep) {
      console.log(`Rein ÷ naive, Redis reads (client round trips) per step: ${(rein.readsPerStep / naive.readsPerStep).toFixed(2)}×`);
    }
    if (naive.cpuUsPerStep && rein.cpuUsPerStep) {
      console.log(`Rein ÷ naive, Redis CPU per step: ${(rein.cpuUsPerStep / naive.cpuUsPerStep).toFixed(2)}×`);
    }

    const naiveSaturated = await naiveBullmq(10, BURST_RUNS);
    const one = await reinBurst(1);
    const two = await reinBurst(2);
    console.log(`\nSaturation: ${BURST_RUNS} runs of 10 steps submitted at once, WORKER_CONCURRENCY ${CONCURRENCY}`);
    console.table([
      {
        system: 'naive BullMQ (worker in the bench process)',
        workers: 1,
        'steps/s': naiveSaturated.stepsPerSecond.toFixed(0),
        'Redis cmds/step': naiveSaturated.commandsPerStep?.toFixed(1),
        'Redis reads/step': naiveSaturated.readsPerStep?.toFixed(1),
        'Redis CPU/step (µs)': naiveSaturated.cpuUsPerStep?.toFixed(0),
      },
      ...[one, two].map((b) => ({
        system: 'Rein',
        workers: b.workers,
        'steps/s': b.stepsPerSecond.toFixed(0),
        'Redis cmds/step': b.commandsPerStep.toFixed(1),
        'Redis reads/step': b.readsPerStep.toFixed(1),
        'Redis CPU/step (µs)': b.cpuUsPerStep.toFixed(0),
      })),
    ]);
    if (naiveSaturated.commandsPerStep && naiveSaturated.cpuUsPerStep) {
      console.log(
        `Rein (1 worker) ÷ naive at saturation: Redis commands per step ${(one.commandsPerStep / naiveSaturated.commandsPerStep).toFixed(2)}×, Redis CPU per step ${(one.cpuUsPerStep / naiveSaturated.cpuUsPerStep).toFixed(2)}×`,
      );
    }
    const memory = await reinRss();
    console.log(`\nWorker RSS: ${memory.idleMb.toFixed(0)} MB idle, ${memory.peakMb.toFixed(0)} MB peak with ${RSS_RUNS} active runs`);
    expect(rein.steps.length).toBe(SEQ_RUNS * 9); // every run made its K calls; timings are reported, not asserted
  }, 600_000);

  it('reports the per-step cost mid-deploy (versions promoted and upgrading) beside one version', async () => {
    const single = await reinSequential(10);
    const deploying = await reinSequential(10, SEQ_RUNS, true, true);
    console.log(`\nStep cost with app versions: sequential runs (${SEQ_RUNS} × K=10), zero-latency fake model`);
    console.table(
      [single, deploying].map((row) => ({
        system: row.system,
        'step p50 (ms)': ms(percentile(row.steps, 50)),
        'step p99 (ms)': ms(percentile(row.steps, 99)),
        'Redis cmds/step': row.commandsPerStep?.toFixed(1) ?? '–',
        'Redis reads/step': row.readsPerStep?.toFixed(1) ?? '–',
        'Redis CPU/step (µs)': row.cpuUsPerStep?.toFixed(0) ?? '–',
      })),
    );
    console.log(`Redis commands per step, mid-deploy: ${deploying.mix}`);
    expect(deploying.steps.length).toBe(SEQ_RUNS * 9); // every run made its K calls on v2; timings are reported, not asserted
  }, 600_000);
});
