import type { RunRecord } from '@rein/contract';
import { AgentCatalog, defineAgent } from '@rein/define/internal';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StepScheduler, stepQueue } from '../src/adapters/queue/job-catalog.js';
import { RedisEffectLedger } from '../src/adapters/redis/effect-ledger.js';
import { RunStore } from '../src/adapters/redis/run-store.js';
import { createRunArchiving, type RunArchivingDeps } from '../src/features/archive/run-archiving.js';
import { type CompensatorDeps, createCompensator } from '../src/features/compensation/compensation.js';
import { createRunTree } from '../src/features/tree/run-tree.js';
import type { FleetVersions } from '../src/policy/app/fleet-versions.js';
import { runEvent } from '../src/policy/run/run-event.js';
import { routeVersion } from '../src/policy/run/version-route.js';
import type { PlannedCall } from '../src/policy/step/call-plan.js';
import { childRecord, childRunId } from '../src/policy/step/sub-agents.js';
import { createMetrics } from '../src/shared/metrics.js';
import { createChildRuns } from '../src/step/child-runs.js';
import { startTestRedis, type TestRedis } from '../src/testing/index.js';

/**
 * The jobs a run's tree and its finish enqueue go to the right version's queue: a child's
 * first step to its parent's version, a parent's wake-up to the parent's version (as it
 * is now, after an upgrade), a finished run's archive job to the version that ran it, its
 * undo to the current version; an upgrade moves whatever waits on the version it leaves.
 * A real StepScheduler routing over a fixed fleet state, on a Redis of this file's own.
 */

let redis: TestRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const fleet: FleetVersions = { upgrades: { v0: 'v3' }, newestApi: 'v3' };
/** A worker of v3 (the current version) enqueues: its router sends each job to its run's version. */
const scheduler = () =>
  new StepScheduler({ url: redis.url, maxRetriesPerRequest: null }, 3, 1, { own: 'v3', route: (r) => routeVersion(r, fleet, 'v3') });

/** The versions whose queues hold job `id`. */
async function queuedOn(id: string, versions = ['v0', 'v1', 'v2', 'v3']): Promise<string[]> {
  const found: string[] = [];
  for (const version of versions) {
    const queue = stepQueue({ url: redis.url }, 0, version);
    if (await queue.getJob(id)) found.push(version);
    await queue.close();
  }
  return found;
}

const at = Date.parse('2026-01-01T00:00:00.000Z');
const root = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  id: crypto.randomUUID(),
  traceId: '0'.repeat(32),
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user'],
  agent: 'parent',
  input: 'go',
  metadata: {},
  limits: { maxSteps: 10, maxTokens: 10_000, timeoutMs: 3_600_000 },
  status: 'waiting',
  step: 2,
  usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  costUsd: 0,
  pendingApprovals: [],
  version: 0,
  createdAt: new Date(at).toISOString(),
  updatedAt: new Date(at).toISOString(),
  deadlineAt: new Date(Date.now() + 3_600_000).toISOString(),
  ...over,
});

const metrics = createMetrics('routing');
const logger = pino({ level: 'silent' });

describe('routing by version, job by job', () => {
  it("sends a child's first step to its parent's version, or the current one for an upgrading agent", async () => {
    const s = scheduler();
    const store = new RunStore(client, 3600, metrics);
    const agents = new AgentCatalog(
      [
        defineAgent({ name: 'parent', instructions: 'p', tools: [], agents: ['pinned', 'follower'] }),
        defineAgent({ name: 'pinned', instructions: 'c', tools: [] }),
        defineAgent({ name: 'follower', instructions: 'f', tools: [], versioning: 'upgrade' }),
      ],
      'parent',
    );
    const spawn = createChildRuns({ store, ledger: new RedisEffectLedger(client), agents, enqueue: s.enqueue });
    const parent = root({ appVersion: 'v1', status: 'running' });
    await store.create(parent, { role: 'user', content: parent.input }, runEvent('run.queued', parent.id, 0));
    const call = (id: string, agent: string): Extract<PlannedCall, { kind: 'spawn' }> => ({
      kind: 'spawn',
      call: { id, type: 'function', function: { name: `call_${agent}`, arguments: '{"input":"x"}' } } as never,
      args: { input: 'x' },
      agent,
      input: 'x',
      childId: childRunId(parent.id, parent.step, id),
      ctx: {
        tenantId: 'acme',
        userId: 'alice',
        roles: ['user'],
        runId: parent.id,
        step: parent.step,
        toolCallId: id,
        idempotencyKey: `${parent.id}:${parent.step}:${id}`,
        deadlineMs: Date.parse(parent.deadlineAt),
      },
      extra: { childRunId: childRunId(parent.id, parent.step, id) },
      warnings: [],
    });
    await spawn(parent, call('a', 'pinned'), 2);
    await spawn(parent, call('b', 'follower'), 2);
    // The pinned child runs on v1 (its parent's), though this worker is v3; the upgrading one on the current v3.
    expect(await queuedOn(`${childRunId(parent.id, parent.step, 'a')}-0`)).toEqual(['v1']);
    expect(await queuedOn(`${childRunId(parent.id, parent.step, 'b')}-0`)).toEqual(['v3']);
    await s.close();
  });

  it("wakes a parent on its own version's queue — the one it was upgraded to, not its child's", async () => {
    const s = scheduler();
    const store = new RunStore(client, 3600, metrics);
    const tree = createRunTree({ store, applier: { apply: async (run) => run }, enqueue: s.enqueue, logger });
    for (const [parentVersion, expected] of [
      ['v1', 'v1'],
      ['v0', 'v3'], // v0 is being upgraded to v3: the parent's next step is v3's
    ] as const) {
      const parent = root({ appVersion: parentVersion });
      await store.create(parent, { role: 'user', content: parent.input }, runEvent('run.queued', parent.id, 0));
      const child = {
        ...childRecord(parent, { id: crypto.randomUUID(), agent: 'c', input: 'x', limits: parent.limits }, at),
        appVersion: 'v2',
      };
      await tree.finished({ ...child, status: 'succeeded' });
      expect(await queuedOn(`${parent.id}-${parent.step}-wake-${child.id}`)).toEqual([expected]);
    }
    await s.close();
  });

  it("archives a finished run from its own version's queue", async () => {
    const s = scheduler();
    const hot = { pending: async () => undefined } as unknown as RunArchivingDeps['hot'];
    const archiving = createRunArchiving({
      hot,
      archive: {} as RunArchivingDeps['archive'],
      enqueue: s.enqueue,
      metrics,
      logger,
      hotRetentionMs: 60_000,
      staleMs: 60_000,
    });
    const pinned = root({ appVersion: 'v1', status: 'succeeded' });
    const upgrading = root({ appVersion: 'v1', versioning: 'upgrade', status: 'succeeded' });
    await archiving.finished(pinned);
    await archiving.finished(upgrading);
    expect(await queuedOn(`${pinned.id}-archive`)).toEqual(['v1']);
    expect(await queuedOn(`${upgrading.id}-archive`)).toEqual(['v3']);
    await s.close();
  });

  it("sends a finished run's undo to the current version, not to the version that ran it", async () => {
    const s = scheduler();
    const store = new RunStore(client, 3600, metrics);
    const compensator = createCompensator({ store, enqueue: s.enqueue, logger } as unknown as CompensatorDeps);
    const run = root({ appVersion: 'v1', status: 'failed' });
    await store.create(run, { role: 'user', content: run.input }, runEvent('run.queued', run.id, 0));
    const at = new Date().toISOString();
    await store.saveCompensation(
      { schemaVersion: 1, round: 1, status: 'pending', trigger: 'ask', requestedBy: 'alice', steps: [], createdAt: at, updatedAt: at },
      run.id,
      true,
    );
    // Its plan was approved: the undo job goes where the fleet's workers are (v3), though no worker of v1 may be left.
    await compensator.decided(run);
    expect(await queuedOn(`${run.id}-compensate-1`)).toEqual(['v3']);
    await s.close();
  });

  it('moves every job waiting on a version to another on upgrade, whatever its kind, keeping delays', async () => {
    const s = scheduler();
    const runId = crypto.randomUUID();
    const v7 = stepQueue({ url: redis.url }, 0, 'v7');
    await v7.add('step', { runId, step: 4 }, { jobId: `${runId}-4` });
    await v7.add('compensate', { runId, round: 1 }, { jobId: `${runId}-compensate-1` });
    await v7.add('archive', { runId }, { jobId: `${runId}-archive`, delay: 3_600_000 });
    expect(await s.jobCounts('v7')).toBe(3);
    expect(await s.moveJobs('v7', 'v8')).toBe(3);
    for (const id of [`${runId}-4`, `${runId}-compensate-1`, `${runId}-archive`]) expect(await queuedOn(id, ['v7', 'v8'])).toEqual(['v8']);
    expect(await s.jobCounts('v7')).toBe(0);
    expect(await s.jobCounts('v8')).toBe(3);
    const v8 = stepQueue({ url: redis.url }, 0, 'v8');
    expect(await (await v8.getJob(`${runId}-archive`))?.getState()).toBe('delayed');
    expect((await v8.getJob(`${runId}-compensate-1`))?.data).toEqual({ runId, round: 1 });
    await Promise.all([v7.close(), v8.close(), s.close()]);
  });
});
