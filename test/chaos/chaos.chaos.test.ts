import type { RedisClient } from '@rein/core';
import { FAULTS_KEY, queuePrefix, runKeys } from '@rein/core/internal';
import { LocalRedis, type TestCluster } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  finalRuns as awaitFinal,
  fleetVersions,
  journaledTokens,
  keepApproving,
  killRandomWorkers,
  persist,
  sleep,
  stuckJobs,
} from '../support/chaos.js';
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

async function runScenario(name: string, fleet: Fleet, disrupt: (fleet: Fleet) => Promise<void>, on: Target): Promise<Outcome> {
  const client: RedisClient = on.topology.client;
  const ids: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const { status, body } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: INPUTS[i % INPUTS.length] });
    expect(status).toBe(202);
    ids.push(body.id);
  }
  const approver = keepApproving(fleet);

  await disrupt(fleet);
  const disruptionOver = Date.now();

  const finalRuns = await awaitFinal<{ status: string; reason?: string; usage: { totalTokens: number } }>(fleet, ids);
  const recoveryMs = Date.now() - disruptionOver;
  await approver.stop();

  // Effects: every approved write happened once, and nothing else did.
  const tickets = await new DemoStore(client).tickets(KEYS.user.tenantId);
  const approvedTickets = [];
  let tokenMismatches = 0;
  for (const id of ids) {
    const approvals = Object.values(await client.hgetall(runKeys(id).approvals)).map((a) => JSON.parse(a));
    approvedTickets.push(...approvals.filter((a) => a.status === 'approved' && a.toolName === 'create_ticket'));
    // Tokens: the run's usage must equal its journaled decisions — each paid and counted once.
    if (finalRuns.has(id) && finalRuns.get(id)?.usage.totalTokens !== (await journaledTokens(client, id))) tokenMismatches++;
  }

  // Jobs: with every run finished, no work may be left waiting, active or delayed — not even
  // an expiry timer (decided approvals cancel theirs) — on any version's queues.
  const leftovers = await stuckJobs(client, on.shards, await fleetVersions(fleet));

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
