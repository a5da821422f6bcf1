import type { RedisClient } from '@rein/core';
import { FAULTS_KEY, queuePrefix, runKeys, stepQueue } from '@rein/core/internal';
import { LocalRedis, type TestCluster } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';
import { startTopology, type Topology } from '../support/topology.js';

/**
 * The chaos suite: real processes, a real Redis with AOF, the scripted model with fault
 * injection. Each scenario submits a batch of runs (some needing approval, approved by
 * the test), disrupts the fleet, and then checks that every run reached its terminal
 * status, every approved write happened exactly once, no token was counted twice and no
 * job is left stuck. `npm test` runs it bounded; `npm run chaos` runs it bigger.
 */
const RUNS = Number(process.env.CHAOS_RUNS ?? 6);
const DISRUPT_MS = Number(process.env.CHAOS_DISRUPT_MS ?? 5000);

const INPUTS = [
  '支持 7 天无理由退货吗？',
  '客户张三投诉订单 2024001 一直没发货，帮他处理一下',
  '查订单 A12345 状态，按政策说能否退',
  'Do you support 7-day no-reason returns?',
];
const TERMINAL = ['succeeded', 'failed', 'cancelled'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outcome {
  scenario: string;
  submitted: number;
  succeeded: number;
  failedByReason: Record<string, number>;
  lost: number;
  duplicatedEffects: number;
  missingEffects: number;
  tokenMismatches: number;
  stuckJobs: number;
  recoveryMs: number;
}
const table: Outcome[] = [];

/** Where a scenario runs: its Redis, and the fleet settings that go with it. */
interface Target {
  topology: Topology;
  env: Record<string, string>;
  shards: number;
}

let redis: LocalRedis;
let single: Target;
beforeAll(async () => {
  redis = await LocalRedis.start({ appendOnly: true });
  single = { topology: await startTopology('single', { local: redis }), env: {}, shards: 1 };
});
afterAll(async () => {
  await single.topology.stop();
  const rows = table.map((o) => ({
    scenario: o.scenario,
    submitted: o.submitted,
    succeeded: o.succeeded,
    'failed (reason)':
      Object.entries(o.failedByReason)
        .map(([r, n]) => `${r}:${n}`)
        .join(' ') || '-',
    lost: o.lost,
    'duplicated effects': o.duplicatedEffects,
    'missing effects': o.missingEffects,
    'tokens counted twice': o.tokenMismatches,
    'stuck jobs': o.stuckJobs,
    'recovery (ms)': o.recoveryMs,
  }));
  console.log(`\nChaos suite: ${RUNS} runs per scenario, disruptions of ${DISRUPT_MS} ms`);
  console.table(rows);
});

async function withFleet(name: string, disrupt: (fleet: Fleet) => Promise<void>, on: Target = single) {
  await on.topology.flush();
  const fleet = await startFleet({
    ...on.topology.fleet,
    workers: 3,
    // Model-like latency keeps every run in flight while the disruption lands.
    modelLatencyMs: 500,
    env: {
      REIN_FAULT_INJECTION: 'on',
      REIN_MODEL_TIMEOUT_MS: '1500',
      REIN_TOOL_TIMEOUT_MS: '1000',
      REIN_BREAKER_VOLUME: '3',
      REIN_BREAKER_RESET_MS: '1000',
      REIN_REAPER_INTERVAL_MS: '1000',
      REIN_REAPER_STALE_MS: '3000',
      REIN_SWEEP_INTERVAL_MS: '1000',
      LOG_LEVEL: 'error',
      REIN_QUEUE_SHARDS: String(on.shards),
      ...on.env,
    },
    modelEnv: { SCRIPTED_MODEL_FAULTS: 'on' },
  });
  try {
    return await runScenario(name, fleet, disrupt, on);
  } finally {
    await fleet.stop();
  }
}

/** Retries a call while the fleet is being disrupted (Redis down answers 503). */
async function persist<T>(fn: () => Promise<T>, until = Date.now() + 60_000): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(200);
    }
  }
}

async function runScenario(name: string, fleet: Fleet, disrupt: (fleet: Fleet) => Promise<void>, on: Target): Promise<Outcome> {
  const client: RedisClient = on.topology.client;
  const ids: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const { status, body } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: INPUTS[i % INPUTS.length] });
    expect(status).toBe(202);
    ids.push(body.id);
  }
  let approving = true;
  const approver = (async () => {
    while (approving) {
      const pending = await fleet.callApprover('GET', '/v1/approvals?status=pending', KEYS.approver.key).catch(() => null);
      for (const a of pending?.body?.approvals ?? [])
        await fleet.callApprover('POST', `/v1/approvals/${a.id}/approve`, KEYS.approver.key, {}).catch(() => {});
      await sleep(300);
    }
  })();

  await disrupt(fleet);
  const disruptionOver = Date.now();

  const finalRuns = new Map<string, { status: string; reason?: string; usage: { totalTokens: number } }>();
  const until = Date.now() + 90_000;
  while (finalRuns.size < ids.length && Date.now() < until) {
    for (const id of ids.filter((x) => !finalRuns.has(x))) {
      const { status, body } = await fleet.callApi('GET', `/v1/runs/${id}`).catch(() => ({ status: 0, body: null }));
      if (status === 200 && TERMINAL.includes(body.status)) finalRuns.set(id, body);
    }
    await sleep(250);
  }
  const recoveryMs = Date.now() - disruptionOver;
  approving = false;
  await approver;

  // Effects: every approved write happened once, and nothing else did.
  const tickets = await new DemoStore(client).tickets(KEYS.user.tenantId);
  const approvedTickets = [];
  let tokenMismatches = 0;
  for (const id of ids) {
    const approvals = Object.values(await client.hgetall(runKeys(id).approvals)).map((a) => JSON.parse(a));
    approvedTickets.push(...approvals.filter((a) => a.status === 'approved' && a.toolName === 'create_ticket'));
    // Tokens: the run's usage must equal its journaled decisions — each paid and counted once.
    const decisions = Object.values(await client.hgetall(runKeys(id).decisions)).map((d) => JSON.parse(d));
    const journaled = decisions.reduce((sum, d) => sum + d.usage.promptTokens + d.usage.completionTokens, 0);
    if (finalRuns.has(id) && finalRuns.get(id)?.usage.totalTokens !== journaled) tokenMismatches++;
  }

  // Jobs: with every run finished, no work may be left waiting, active or delayed — not even
  // an expiry timer (decided approvals cancel theirs). Only the housekeeping schedulers stay.
  // A job whose worker lost it in the disruption (active, its lock lapsed) is still being
  // recovered when the last run ends: the stalled check hands it to a worker, which finds
  // its run finished. So "stuck" is what is still there after a bounded wait.
  const leftoverJobs = async () => {
    const left = [];
    for (let shard = 0; shard < on.shards; shard++) {
      const queue = stepQueue(client, shard);
      left.push(
        ...(await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized'])).filter((j) => j && !['sweep', 'reap'].includes(j.name)),
      );
      await queue.close();
    }
    return left;
  };
  let leftovers = await leftoverJobs();
  for (const settleBy = Date.now() + 30_000; leftovers.length > 0 && Date.now() < settleBy; leftovers = await leftoverJobs())
    await sleep(500);

  const failedByReason: Record<string, number> = {};
  for (const run of finalRuns.values())
    if (run.status !== 'succeeded') failedByReason[run.reason ?? run.status] = (failedByReason[run.reason ?? run.status] ?? 0) + 1;
  const outcome: Outcome = {
    scenario: name,
    submitted: ids.length,
    succeeded: [...finalRuns.values()].filter((r) => r.status === 'succeeded').length,
    failedByReason,
    lost: ids.length - finalRuns.size,
    duplicatedEffects: Math.max(0, tickets.length - approvedTickets.length),
    missingEffects: Math.max(0, approvedTickets.length - tickets.length),
    tokenMismatches,
    stuckJobs: leftovers.length,
    recoveryMs,
  };
  table.push(outcome);
  return outcome;
}

function expectNothingLost(o: Outcome) {
  expect(o.lost).toBe(0);
  expect(o.duplicatedEffects).toBe(0);
  expect(o.missingEffects).toBe(0);
  expect(o.tokenMismatches).toBe(0);
  expect(o.stuckJobs).toBe(0);
}

const killRandomWorkers = async (fleet: Fleet, forMs: number) => {
  const end = Date.now() + forMs;
  while (Date.now() < end) {
    await sleep(1200);
    const alive = fleet.workers.filter((w) => w.exitCode === null && w.signalCode === null);
    const victim = alive[Math.floor(Math.random() * alive.length)];
    victim?.kill('SIGKILL');
    await fleet.startWorker();
  }
};
const restartRedis = async (downMs: number) => {
  await sleep(500);
  await redis.shutdown();
  await sleep(downMs);
  await redis.start();
};
const modelFault = (fleet: Fleet, fault: Record<string, unknown>) =>
  fetch(`${fleet.model}/_faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fault) });
const hangTools = (forMs: number) => persist(() => single.topology.client.hset(FAULTS_KEY, 'toolHangUntil', String(Date.now() + forMs)));

describe('chaos: nothing is lost', () => {
  it('survives SIGKILL of random workers while runs are in flight', async () => {
    const o = await withFleet('kill workers', (fleet) => killRandomWorkers(fleet, DISRUPT_MS));
    expectNothingLost(o);
    expect(o.succeeded).toBe(o.submitted);
  });

  it('survives Redis being stopped and started again', async () => {
    const o = await withFleet('restart redis', () => restartRedis(Math.min(DISRUPT_MS, 3000)));
    expectNothingLost(o);
    expect(o.succeeded).toBe(o.submitted);
  });

  it('rides out a model answering 500 and 429, then recovering', async () => {
    const o = await withFleet('model 500/429', async (fleet) => {
      await modelFault(fleet, { mode: 'error', status: 500, untilMs: Date.now() + DISRUPT_MS / 2 });
      await sleep(DISRUPT_MS / 2);
      await modelFault(fleet, { mode: 'error', status: 429, retryAfterSeconds: 1, untilMs: Date.now() + DISRUPT_MS / 2 });
      await sleep(DISRUPT_MS / 2);
    });
    expectNothingLost(o);
    expect(o.succeeded).toBe(o.submitted);
  });

  it('rides out a model that hangs past its timeout, and tools that hang past theirs', async () => {
    const o = await withFleet('model and tools hang', async (fleet) => {
      await modelFault(fleet, { mode: 'hang', untilMs: Date.now() + DISRUPT_MS / 2 });
      await sleep(DISRUPT_MS / 2);
      await hangTools(DISRUPT_MS / 2);
      await sleep(DISRUPT_MS / 2);
    });
    expectNothingLost(o);
  });

  it('survives all of the above at once, with workers restarting', async () => {
    const o = await withFleet('all at once', (fleet) =>
      Promise.all([
        killRandomWorkers(fleet, DISRUPT_MS),
        restartRedis(Math.min(DISRUPT_MS, 2000)),
        modelFault(fleet, { mode: 'error', status: 500, untilMs: Date.now() + DISRUPT_MS / 2 }),
        hangTools(DISRUPT_MS / 2),
      ]).then(() => {}),
    );
    expectNothingLost(o);
  });
});

/** A 3-master cluster (AOF on, `replicas` per master) with 3 step-queue shards, for the describe block it is called in. */
function clusterPerBlock(replicas = 0): () => Target {
  let cluster: Target | undefined;
  beforeAll(async () => {
    cluster = { topology: await startTopology('cluster', { appendOnly: true, replicas }), env: {}, shards: 3 };
  });
  afterAll(async () => {
    await cluster?.topology.stop();
  });
  return () => {
    if (!cluster?.topology.cluster) throw new Error('no cluster');
    return cluster;
  };
}

/** The master holding shard 0: its queue, the housekeeping schedulers, and the runs hashed to its slots. */
const shardZeroMaster = (nodes: TestCluster) => nodes.nodeFor(`${queuePrefix(0)}:rein-steps:meta`);

describe('chaos on a Redis Cluster (3 masters, 3 step-queue shards)', () => {
  const cluster = clusterPerBlock();

  // The master holding shard 0's queue, the housekeeping schedulers and a third of the runs
  // dies without a replica to take over; its slots are gone until it restarts from its AOF.
  it('survives a master being killed (SIGKILL) and restarted', async () => {
    const o = await withFleet(
      'cluster: kill a master',
      async () => {
        const nodes = cluster().topology.cluster as TestCluster;
        const victim = await shardZeroMaster(nodes);
        await sleep(500);
        await victim.kill();
        await sleep(Math.min(DISRUPT_MS, 3000));
        await victim.start();
        await nodes.waitHealthy();
      },
      cluster(),
    );
    expectNothingLost(o);
    expect(o.succeeded).toBe(o.submitted);
  });
});

describe('chaos on a Redis Cluster with a replica per master', () => {
  const cluster = clusterPerBlock(1);

  it('fails over when a master is killed: its replica takes over, nothing is lost', async () => {
    const o = await withFleet(
      'cluster: failover',
      async () => {
        const nodes = cluster().topology.cluster as TestCluster;
        const victim = await shardZeroMaster(nodes);
        await sleep(500);
        await victim.kill();
        // The replica is promoted while the old master stays down; then it comes back as a replica.
        const until = Date.now() + 30_000;
        while ((await shardZeroMaster(nodes)).port === victim.port) {
          if (Date.now() > until) throw new Error('no failover within 30 s');
          await sleep(200);
        }
        await nodes.waitHealthy();
        await sleep(Math.min(DISRUPT_MS, 3000));
        await victim.start();
        await nodes.waitHealthy();
      },
      cluster(),
    );
    expectNothingLost(o);
    expect(o.succeeded).toBe(o.submitted);
  });
});
