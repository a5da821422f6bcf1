import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startFleet } from '../test/support/fleet.js';
import { benchInput, percentile, type StepFake, startStepFake, stepIntervals } from './step-fake.js';

/**
 * What one ReAct step costs, side by side in one run on the same zero-latency fake model
 * and the same agent (`npm run bench`; see docs/performance.md): the raw fetch loop (the
 * floor), a naive BullMQ job-per-step design (history as one JSON key), and Rein's fleet,
 * all with the common bench agent (one `echo` tool, `echo-app.mjs`); Rein with the demo
 * order assistant as a second row. Redis figures come from INFO deltas of a dedicated
 * redis-server, so commands inside Lua count; process CPU from /proc. Reported, never
 * asserted: only correctness is checked.
 */
const here = dirname(fileURLToPath(import.meta.url));
/** Rein runs the common bench agent as an app, like a user's. */
const ECHO_APP = { REIN_APP: join(here, 'echo-app.mjs') };
const SEQ_RUNS = Number(process.env.BENCH_SEQ_RUNS ?? 20);
const BURST_RUNS = Number(process.env.BENCH_BURST_RUNS ?? 200);
const RSS_RUNS = Number(process.env.BENCH_RSS_RUNS ?? 1000);
const CONCURRENCY = 16;
/** Naive and Rein measured this many times each, alternately; the targets are judged on the medians. */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
/** A directory: each worker writes a V8 CPU profile there when it stops (open it in Chrome DevTools). */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF_DIR;

let redis: TestRedis;
let client: Redis;
let fake: StepFake;
let anchors: Anchors;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  fake = await startStepFake();
  anchors = startAnchors();
});
afterAll(async () => {
  await anchors.stop();
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
  /** At saturation: CPU (ms) per step of the process that runs the steps (Rein: its first worker). */
  processCpuMsPerStep?: number;
  /** Rein at saturation: CPU (ms) per step of its API process. */
  apiCpuMsPerStep?: number;
  /** At saturation: system calls per step of that process that write (sockets mostly) and read. */
  syscallsPerStep?: Syscalls;
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

/** The anchors' process (bench/anchors.mjs): asked to do work, it answers with its CPU time so far. */
interface Anchors {
  pid: number;
  ask(msg: object): Promise<number>;
  stop(): Promise<void>;
}

function startAnchors(): Anchors {
  const child = fork(join(here, 'anchors.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let next = 0;
  const pending = new Map<number, { resolve: (cpuMs: number) => void; reject: (err: Error) => void }>();
  child.on('message', (m: { id: number; cpu?: { user: number; system: number }; error?: string }) => {
    const waiter = pending.get(m.id);
    pending.delete(m.id);
    if (m.error || !m.cpu) waiter?.reject(new Error(m.error ?? 'no answer'));
    else waiter?.resolve((m.cpu.user + m.cpu.system) / 1000);
  });
  const ask = (msg: object) =>
    new Promise<number>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      child.send({ id, fakeUrl: fake.url, ...msg });
    });
  return { pid: child.pid as number, ask, stop: () => ask({ stop: true }).then(() => undefined) };
}

/** CPU time (ms) a process has used so far, from /proc (user + system, in clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Syscalls {
  writes: number;
  reads: number;
}

/** System calls a process has made so far that write and read (/proc/<pid>/io): each socket write costs the kernel's loopback work too. */
function processSyscalls(pid: number): Syscalls {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1] ?? 0);
  return { writes: field('syscw'), reads: field('syscr') };
}

const syscallsPerStep = (before: Syscalls, after: Syscalls, steps: number): Syscalls => ({
  writes: (after.writes - before.writes) / steps,
  reads: (after.reads - before.reads) / steps,
});

/** The floor: one process, a while loop, history in memory. */
async function rawLoop(k: number): Promise<Row> {
  fake.reset();
  await anchors.ask({ raw: Array.from({ length: SEQ_RUNS }, (_, r) => benchInput(`raw-${r}`, k)) });
  return { system: 'raw fetch loop', steps: stepIntervals(fake.arrivals) };
}

/**
 * A naive queue design: one BullMQ job per step, the history as one JSON string key.
 * `burst`: that many runs submitted at once (saturation) instead of `SEQ_RUNS` one after
 * another.
 */
async function naiveBullmq(k: number, burst = 0): Promise<Row & { stepsPerSecond: number }> {
  fake.reset();
  await client.flushall();
  await anchors.ask({ naiveStart: { redisUrl: redis.url, concurrency: CONCURRENCY } });
  const runs = burst || SEQ_RUNS;
  const cpuBefore = await anchors.ask({});
  const ioBefore = processSyscalls(anchors.pid);
  const started = performance.now();
  const cost = await withRedisCost(runs * k, async () => {
    const run = (tag: string) => ({ tag, input: benchInput(tag, k) });
    if (burst) {
      const tags = Array.from({ length: burst }, (_, i) => `naive-burst-${i}`);
      await anchors.ask({ naiveSubmit: tags.map(run) });
      await Promise.all(tags.map((tag) => fake.answered(tag)));
      return;
    }
    for (let r = 0; r < runs; r++) {
      await anchors.ask({ naiveSubmit: [run(`naive-${r}`)] });
      await fake.answered(`naive-${r}`);
    }
  });
  const stepsPerSecond = (runs * k) / ((performance.now() - started) / 1000);
  const cpuAfter = await anchors.ask({});
  const ioAfter = processSyscalls(anchors.pid);
  await anchors.ask({ naiveStop: true });
  return {
    system: 'naive BullMQ job-per-step',
    steps: stepIntervals(fake.arrivals),
    stepsPerSecond,
    processCpuMsPerStep: (cpuAfter - cpuBefore) / (runs * k),
    syscallsPerStep: syscallsPerStep(ioBefore, ioAfter, runs * k),
    ...cost,
  };
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

type Fleet = Awaited<ReturnType<typeof startFleet>>;

async function withFleet<T>(workers: number, body: (fleet: Fleet) => Promise<T>, env: Record<string, string> = {}): Promise<T> {
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

/** CPU (ms) the fleet's first worker and its API process spend on `steps` steps of `body`. */
async function withFleetCpu<T>(fleet: Fleet, steps: number, body: () => Promise<T>) {
  const worker = fleet.workers[0]?.pid as number;
  const api = fleet.apiProcess.pid as number;
  const [w0, a0, io0] = [processCpuMs(worker), processCpuMs(api), processSyscalls(worker)];
  const result = await body();
  return {
    result,
    processCpuMsPerStep: (processCpuMs(worker) - w0) / steps,
    apiCpuMsPerStep: (processCpuMs(api) - a0) / steps,
    syscallsPerStep: syscallsPerStep(io0, processSyscalls(worker), steps),
  };
}

interface ReinCase {
  label: string;
  env: () => Record<string, string>;
  /** What the fleet goes through before it is measured. */
  setup?: (fleet: Fleet) => Promise<void>;
}
/** Like the anchors, replies are not streamed; the streamed row shows what streaming adds. */
const ECHO: ReinCase = { label: 'Rein, echo agent', env: () => ({ ...ECHO_APP, ...notStreamed() }) };
const ECHO_STREAMED: ReinCase = { label: 'Rein, echo agent, streamed', env: () => ECHO_APP };
const ORDER_ASSISTANT: ReinCase = { label: 'Rein, order assistant', env: notStreamed };
/**
 * The echo agent on a fleet mid-deploy, as versions see it: this fleet's version (v2)
 * promoted, and an older one (v1, an API process still running it) being upgraded to it,
 * so every job is routed through a non-trivial fleet version state. The state is
 * refreshed in the background: a step should cost what it costs with one version.
 */
const MID_DEPLOY: ReinCase = {
  label: 'Rein, echo agent, v2 promoted, v1 → v2 upgrading',
  env: () => ({ ...ECHO.env(), REIN_APP_VERSION: 'v2' }),
  async setup(fleet) {
    await fleet.startApi({ REIN_APP_VERSION: 'v1' });
    for (let i = 0; ; i++) {
      const promoted = await fleet.callApi('POST', '/v1/versions/v2/promote', KEYS.operator.key, {});
      if (promoted.status === 200) break;
      if (i > 100) throw new Error(`promote failed: ${promoted.status} ${JSON.stringify(promoted.body)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const upgrade = await fleet.callApi('POST', '/v1/versions/v1/upgrade', KEYS.operator.key, { to: 'v2' });
    if (upgrade.status !== 202) throw new Error(`upgrade failed: ${upgrade.status} ${JSON.stringify(upgrade.body)}`);
  },
};

/** Rein, one run at a time: per-step latency and Redis cost. */
async function reinSequential(rein: ReinCase, k: number, runs = SEQ_RUNS): Promise<Row> {
  return withFleet(
    1,
    async (fleet) => {
      await rein.setup?.(fleet);
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
      return { system: `${rein.label} (K=${k})`, steps: stepIntervals(fake.arrivals), ...cost };
    },
    rein.env(),
  );
}

/** Rein at saturation: `BURST_RUNS` runs of 10 steps submitted at once. */
async function reinBurst(rein: ReinCase, workers: number) {
  return withFleet(
    workers,
    async (fleet) => {
      const tags = Array.from({ length: BURST_RUNS }, (_, i) => `burst-${workers}-${i}`);
      const started = performance.now();
      const { result: cost, ...cpu } = await withFleetCpu(fleet, BURST_RUNS * 10, () =>
        withRedisCost(BURST_RUNS * 10, async () => {
          await Promise.all(tags.map((tag) => submit(fleet, tag, 10)));
          await Promise.all(tags.map((tag) => fake.answered(tag)));
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      // With two workers the first one's CPU is about half the work: per step, it counts for both.
      return { system: rein.label, workers, stepsPerSecond: (BURST_RUNS * 10) / seconds, ...cost, ...cpu };
    },
    rein.env(),
  );
}

/** A saturation measurement as a table row (worker CPU counted for every worker). */
const saturationRow = (b: Omit<Row, 'steps'> & { stepsPerSecond: number; workers?: number }) => {
  const workers = b.workers ?? 1;
  return {
    system: b.system,
    workers,
    'steps/s': b.stepsPerSecond.toFixed(0),
    'worker CPU/step (ms)': cpuCell(b.processCpuMsPerStep === undefined ? undefined : b.processCpuMsPerStep * workers),
    'API CPU/step (ms)': cpuCell(b.apiCpuMsPerStep),
    'worker writes/step': workers === 1 ? (b.syscallsPerStep?.writes.toFixed(2) ?? '–') : '–',
    'worker reads/step': workers === 1 ? (b.syscallsPerStep?.reads.toFixed(2) ?? '–') : '–',
    'Redis cmds/step': b.commandsPerStep?.toFixed(1),
    'Redis reads/step': b.readsPerStep?.toFixed(1),
    'Redis CPU/step (µs)': b.cpuUsPerStep?.toFixed(0),
  };
};

/** Peak resident memory of one worker while `RSS_RUNS` runs are active. */
async function reinRss() {
  return withFleet(
    1,
    async (fleet) => {
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
    },
    ECHO.env(),
  );
}

const ms = (v: number) => v.toFixed(2);
const ratio = (a: number | undefined, b: number | undefined) => (a && b ? `${(a / b).toFixed(2)}×` : '–');
const cpuCell = (v: number | undefined) => (v === undefined ? '–' : v.toFixed(3));
const median = (values: number[]) => percentile(values, 50);

/** One figure over the interleaved pairs: its median, then every pair's value, so the noise shows. */
function paired(values: number[], unit: (v: number) => string, target?: string) {
  return `${unit(median(values))} (${values.map(unit).join(', ')})${target ? ` — target ${target}` : ''}`;
}
const times = (v: number) => `${v.toFixed(2)}×`;
const perStep = (v: number) => v.toFixed(1);
const millis = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(2)} ms`;

/** Rein ÷ naive of one figure in each pair. */
const ratios = <N, R>(pairs: Array<{ naive: N; rein: R }>, figure: (row: N | R) => number | undefined) =>
  pairs.map(({ naive, rein }) => (figure(rein) ?? Number.NaN) / (figure(naive) ?? Number.NaN));

describe('step cost benchmark', () => {
  it('judges Rein against naive by the median of interleaved pairs, and reports the other rows once', async () => {
    // The floor, once: the targets compare Rein with naive, measured right beside it.
    const raw = await rawLoop(10);
    const floor = percentile(raw.steps, 50);
    // Naive, Rein, naive, Rein, …: one run, the same agent, each pair as close in time as the bench allows.
    const sequential: Array<{ naive: Row; rein: Row }> = [];
    const saturated: Array<{ naive: Awaited<ReturnType<typeof naiveBullmq>>; rein: Awaited<ReturnType<typeof reinBurst>> }> = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      const naive = await naiveBullmq(10);
      const rein = await reinSequential(ECHO, 10);
      sequential.push({ naive, rein });
      const naiveBurst = await naiveBullmq(10, BURST_RUNS);
      const reinOne = await reinBurst(ECHO, 1);
      saturated.push({ naive: naiveBurst, rein: reinOne });
    }
    const p50 = (row: Row) => percentile(row.steps, 50);
    console.log(`\nStep cost: ${PAIRS} interleaved pairs, sequential runs (${SEQ_RUNS} × K=10), zero-latency fake model, echo agent`);
    console.table(
      [raw, ...sequential.flatMap(({ naive, rein }) => [naive, rein])].map((row) => ({
        system: row.system,
        'step p50 (ms)': ms(p50(row)),
        'step p99 (ms)': ms(percentile(row.steps, 99)),
        'Δp50 vs raw': ms(p50(row) - floor),
        'Redis cmds/step': row.commandsPerStep?.toFixed(1) ?? '–',
        'Redis reads/step': row.readsPerStep?.toFixed(1) ?? '–',
        'Redis CPU/step (µs)': row.cpuUsPerStep?.toFixed(0) ?? '–',
      })),
    );
    console.log(`Redis commands per step, naive (last pair): ${sequential.at(-1)?.naive.mix}`);
    console.log(`Redis commands per step, Rein (last pair): ${sequential.at(-1)?.rein.mix}`);
    console.log(`\nSaturation: ${BURST_RUNS} runs of 10 steps submitted at once, WORKER_CONCURRENCY ${CONCURRENCY}, one worker`);
    console.table(saturated.flatMap(({ naive, rein }) => [naive, rein]).map(saturationRow));
    console.log(`Redis commands per step at saturation, Rein (last pair): ${saturated.at(-1)?.rein.mix}`);

    const readsBeside = (rows: Array<{ naive: Pick<Row, 'readsPerStep'>; rein: Pick<Row, 'readsPerStep'> }>) =>
      `Rein ${paired(
        rows.map((p) => p.rein.readsPerStep ?? Number.NaN),
        perStep,
      )}, naive ${paired(
        rows.map((p) => p.naive.readsPerStep ?? Number.NaN),
        perStep,
      )}`;
    console.log(`\nRein ÷ naive, median of ${PAIRS} interleaved pairs (each pair's value in brackets):`);
    console.log(
      `  steps/s at saturation:        ${paired(
        ratios(saturated, (r) => r.stepsPerSecond),
        times,
        '≥ 0.8×',
      )}`,
    );
    console.log(
      `  worker CPU per step:          ${paired(
        ratios(saturated, (r) => r.processCpuMsPerStep),
        times,
        '≤ 1.3×',
      )}`,
    );
    console.log(
      `  Redis CPU per step, saturated: ${paired(
        ratios(saturated, (r) => r.cpuUsPerStep),
        times,
        '≤ 1.5×',
      )}`,
    );
    console.log(
      `  Redis CPU per step, sequential: ${paired(
        ratios(sequential, (r) => r.cpuUsPerStep),
        times,
        '≤ 1.5×',
      )}`,
    );
    console.log(
      `  Redis commands per step, saturated: ${paired(
        ratios(saturated, (r) => r.commandsPerStep),
        times,
      )}`,
    );
    console.log(
      `  Redis commands per step, sequential: ${paired(
        ratios(sequential, (r) => r.commandsPerStep),
        times,
      )}`,
    );
    console.log(
      `  sequential Δp50, Rein's − naive's: ${paired(
        sequential.map(({ naive, rein }) => p50(rein) - p50(naive)),
        millis,
        '≤ +1 ms',
      )}`,
    );
    // Reads processed by Redis per step: the step's own awaited round trips (Rein 4, naive 3) plus BullMQ's handling of the job, which both pay.
    console.log(`  Redis reads (round trips) per step, sequential: ${readsBeside(sequential)}`);
    console.log(`  Redis reads (round trips) per step, saturated: ${readsBeside(saturated)}`);

    // The other rows, once each.
    const rein40 = await reinSequential(ECHO, 40, Math.max(2, Math.round(SEQ_RUNS / 4)));
    const streamed = await reinSequential(ECHO_STREAMED, 10);
    const order = await reinSequential(ORDER_ASSISTANT, 10);
    const last = sequential.at(-1)?.rein as Row;
    console.log('\nOther rows, once each (sequential)');
    console.table(
      [rein40, streamed, order].map((row) => ({
        system: row.system,
        'step p50 (ms)': ms(p50(row)),
        'step p99 (ms)': ms(percentile(row.steps, 99)),
        'Δp50 vs raw': ms(p50(row) - floor),
        'Redis cmds/step': row.commandsPerStep?.toFixed(1) ?? '–',
        'Redis reads/step': row.readsPerStep?.toFixed(1) ?? '–',
        'Redis CPU/step (µs)': row.cpuUsPerStep?.toFixed(0) ?? '–',
      })),
    );
    if (last.commandsPerStep && streamed.commandsPerStep) {
      console.log(
        `Streaming adds ${(streamed.commandsPerStep - last.commandsPerStep).toFixed(1)} Redis commands per step (model.delta batches)`,
      );
    }
    console.log(`K=40 ÷ K=10 step p50 ${ratio(p50(rein40), p50(last))} (flat in run length: about 1×)`);
    const two = await reinBurst(ECHO, 2);
    const orderOne = await reinBurst(ORDER_ASSISTANT, 1);
    console.log('\nOther rows at saturation, once each');
    console.table([two, orderOne].map(saturationRow));
    const memory = await reinRss();
    console.log(`\nWorker RSS: ${memory.idleMb.toFixed(0)} MB idle, ${memory.peakMb.toFixed(0)} MB peak with ${RSS_RUNS} active runs`);
    // Every run made its K calls; timings are reported, not asserted.
    for (const { rein } of sequential) expect(rein.steps.length).toBe(SEQ_RUNS * 9);
  }, 1_800_000);

  it('reports the per-step cost mid-deploy (versions promoted and upgrading) beside one version', async () => {
    const single = await reinSequential(ECHO, 10);
    const deploying = await reinSequential(MID_DEPLOY, 10);
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
