import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runKeys, tenantKeys } from '@rein/core/internal';
import { LocalRedis } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finalRuns, fleetVersions, journaledTokens, keepApproving, killRandomWorkers, persist, stuckJobs } from '../support/chaos.js';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';
import { startTopology, type Topology } from '../support/topology.js';

/**
 * Chaos during a deploy and inside trees of runs: real processes (API, approver, workers,
 * the scripted model) over a Redis with AOF; workers SIGKILLed and restarted while runs
 * are in flight, approvals given by the test. A deploy: workers of two app versions, both
 * killed and restarted — no run lost, none executed by the wrong version, every effect
 * once. A tree: parents starting parallel children — no child created twice, each parent
 * resumed once, the tree's budget held, every refund once.
 */
const RUNS = Number(process.env.CHAOS_RUNS ?? 4);
const DISRUPT_MS = Number(process.env.CHAOS_DISRUPT_MS ?? 5000);

const APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'versioned-app.mjs');
/** The versioned app's effects (test/support/versioned-app.mjs): idempotency key → the version that wrote it. */
const EFFECTS_KEY = 'versioned-app:effects';
const flavour = (v: string) => ({ VERSIONED_APP: v, REIN_APP_VERSION: v });

const CHAOS_ENV = {
  REIN_REAPER_INTERVAL_MS: '1000',
  REIN_REAPER_STALE_MS: '3000',
  REIN_SWEEP_INTERVAL_MS: '1000',
  LOG_LEVEL: 'error',
};

let redis: LocalRedis;
let topology: Topology;
beforeAll(async () => {
  redis = await LocalRedis.start({ appendOnly: true });
  topology = await startTopology('single', { local: redis });
});
afterAll(async () => {
  await topology.stop();
});

async function withFleet<T>(opts: Parameters<typeof startFleet>[0], body: (fleet: Fleet) => Promise<T>): Promise<T> {
  await topology.flush();
  const fleet = await startFleet(opts);
  try {
    return await body(fleet);
  } finally {
    await fleet.stop();
  }
}

const submit = async (fleet: Fleet, body: Record<string, unknown>) => {
  const { status, body: run } = await persist(() => fleet.callApi('POST', '/v1/runs', KEYS.user.key, body));
  expect(status).toBe(202);
  return run.id as string;
};

/** Polls GET /v1/versions until `version` has at least `n` live workers. */
async function workersLive(fleet: Fleet, version: string, n: number) {
  for (let i = 0; i < 600; i++) {
    const { body } = await fleet.callApi('GET', '/v1/versions', KEYS.operator.key);
    if ((body.versions as Array<{ version: string; workers: number }>).some((v) => v.version === version && v.workers >= n)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`version ${version} never had ${n} live workers`);
}

describe('chaos during a deploy: workers of both versions killed and restarted', () => {
  it('loses no run, runs none on the wrong version, and makes every effect once', async () => {
    await withFleet(
      {
        ...topology.fleet,
        workers: 0,
        modelLatencyMs: 300,
        env: { REIN_APP: APP, ...flavour('v1'), ...CHAOS_ENV },
      },
      async (fleet) => {
        // Which version each worker process carries, so a killed one comes back as the same version.
        const versionOf = new Map<ChildProcess, string>();
        const worker = async (version: string) => versionOf.set(await fleet.startWorker(flavour(version)), version);
        await worker('v1');
        await worker('v1');
        await workersLive(fleet, 'v1', 2);
        const v1Runs: string[] = [];
        for (let i = 0; i < RUNS; i++) v1Runs.push(await submit(fleet, { agent: 'deployer', input: `Deploy "old-${i}"` }));

        // The deploy: v2's workers join, v2 is promoted; new runs go to v2 while v1's are in flight.
        await worker('v2');
        await worker('v2');
        await workersLive(fleet, 'v2', 2);
        const promoted = await fleet.callApi('POST', '/v1/versions/v2/promote', KEYS.operator.key, {});
        expect(promoted.status).toBe(200);
        const approver = keepApproving(fleet);
        const v2Runs: string[] = [];
        await Promise.all([
          killRandomWorkers(fleet, DISRUPT_MS, (victim) => worker(versionOf.get(victim) ?? 'v1')),
          (async () => {
            for (let i = 0; i < RUNS; i++) v2Runs.push(await submit(fleet, { agent: 'deployer', input: `Deploy "new-${i}"` }));
          })(),
        ]);
        const ids = [...v1Runs, ...v2Runs];
        const done = await finalRuns<{ status: string; appVersion?: string; finalAnswer?: string; usage: { totalTokens: number } }>(
          fleet,
          ids,
        );
        await approver.stop();

        // No run lost: each finished, and succeeded.
        expect(ids.filter((id) => !done.has(id))).toEqual([]);
        expect([...done.values()].map((r) => r.status)).toEqual(ids.map(() => 'succeeded'));
        const client = topology.client;
        const effects = await client.hgetall(EFFECTS_KEY);
        const expectedVersions: Array<[string, string]> = [
          ...v1Runs.map((id) => [id, 'v1'] as [string, string]),
          ...v2Runs.map((id) => [id, 'v2'] as [string, string]),
        ];
        for (const [id, expected] of expectedVersions) {
          const run = done.get(id);
          // Each run stayed on the version it started on: every step, and its write, ran there.
          expect(run?.appVersion).toBe(expected);
          expect(run?.finalAnswer).toContain(`applied by ${expected}`);
          const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body;
          expect(new Set(trace.steps.map((s: { appVersion?: string }) => s.appVersion))).toEqual(new Set([expected]));
          // Every approved write happened once, on the run's version.
          const approved = Object.values(await client.hgetall(runKeys(id).approvals))
            .map((a) => JSON.parse(a))
            .filter((a) => a.status === 'approved' && a.toolName === 'apply_change');
          const written = Object.entries(effects).filter(([key]) => key.startsWith(`${id}:`));
          expect(written.length).toBe(approved.length);
          expect(approved.length).toBe(1);
          expect(written.map(([, version]) => version)).toEqual([expected]);
          // Each decision paid and counted once.
          expect(run?.usage.totalTokens).toBe(await journaledTokens(client, id));
        }
        expect(await stuckJobs(client, 1, await fleetVersions(fleet))).toEqual([]);
      },
    );
  });
});

describe('chaos inside trees of runs: parents with parallel children, workers killed mid-tree', () => {
  it('creates no child twice, resumes each parent once, holds the tree budget and refunds once', async () => {
    await withFleet({ ...topology.fleet, workers: 3, modelLatencyMs: 300, env: CHAOS_ENV }, async (fleet) => {
      const orders = ['2024001', 'A12345'];
      const approver = keepApproving(fleet);
      const parents: string[] = [];
      for (let i = 0; i < RUNS; i++) {
        parents.push(
          await submit(fleet, {
            agent: 'order-desk',
            input: `Ask the refunds agent about late orders ${orders.join(' and ')}`,
            limits: { maxTokens: 200_000 },
          }),
        );
      }
      await killRandomWorkers(fleet, DISRUPT_MS);
      type View = {
        status: string;
        finalAnswer?: string;
        usage: { totalTokens: number };
        treeUsage?: { totalTokens: number };
        limits: { maxTokens: number };
        children?: Array<{ id: string; agent: string; status: string }>;
      };
      const done = await finalRuns<View>(fleet, parents);
      const client = topology.client;
      const children = [...done.values()].flatMap((p) => p.children ?? []);
      const ended = await finalRuns<View>(
        fleet,
        children.map((c) => c.id),
      );
      await approver.stop();

      expect(parents.filter((id) => !done.has(id))).toEqual([]);
      for (const id of parents) {
        const parent = done.get(id) as View;
        expect(parent.status).toBe('succeeded');
        // Exactly one child per call, and no other child run of the tenant's refunds agent.
        expect(parent.children?.map((c) => [c.agent, c.status])).toEqual(orders.map(() => ['refunds', 'succeeded']));
        // Resumed once: the step that started both children, then the one answer.
        const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body;
        expect(trace.steps).toHaveLength(2);
        expect(trace.steps[0].toolCalls.map((c: { name: string; childRunId?: string }) => c.childRunId).sort()).toEqual(
          parent.children?.map((c) => c.id).sort(),
        );
        expect(parent.finalAnswer).toMatch(/reports: .*reports: /);
        // One budget: the tree's usage is its own plus each child's, counted once, within the root's limit.
        const childTokens = (parent.children ?? []).reduce((sum, c) => sum + (ended.get(c.id)?.usage.totalTokens ?? 0), 0);
        expect(parent.treeUsage?.totalTokens).toBe(parent.usage.totalTokens + childTokens);
        expect(parent.treeUsage?.totalTokens).toBeLessThanOrEqual(parent.limits.maxTokens);
        for (const run of [id, ...(parent.children ?? []).map((c) => c.id)]) {
          const usage = (done.get(run) ?? ended.get(run))?.usage.totalTokens;
          expect(usage).toBe(await journaledTokens(client, run));
        }
      }
      expect(await client.zcard(tenantKeys(KEYS.user.tenantId).runsByAgent('refunds'))).toBe(parents.length * orders.length);
      // Every approved refund happened once, and nothing else did.
      let approvedRefunds = 0;
      for (const child of children) {
        const approvals = Object.values(await client.hgetall(runKeys(child.id).approvals)).map((a) => JSON.parse(a));
        approvedRefunds += approvals.filter((a) => a.status === 'approved' && a.toolName === 'submit_refund').length;
      }
      expect(approvedRefunds).toBe(children.length);
      expect((await new DemoStore(client).refunds(KEYS.user.tenantId)).length).toBe(approvedRefunds);
      expect(await stuckJobs(client, 1, await fleetVersions(fleet))).toEqual([]);
    });
  });
});
