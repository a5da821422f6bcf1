import type { Approval } from '@rein/contract';
import { defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunStore } from '../../src/adapters/redis/run-store.js';
import type { FleetVersions } from '../../src/policy/app/fleet-versions.js';
import { toolDigest } from '../../src/policy/app/tool-digest.js';
import { createMetrics } from '../../src/shared/metrics.js';
import { type PlaceDeps, placeRun } from '../../src/step/place.js';
import type { StepVersions } from '../../src/step/step-deps.js';
import { clock, recordingApplier, run, silentLogger, slice } from './support.js';

/** Place (step/place.ts): which worker runs the step — this one, the run's version's, or this one after moving the run here. */

const refundV2 = defineTool({
  name: 'refund',
  description: 'refund, as version 2 defines it',
  kind: 'write',
  parameters: z.object({ orderNo: z.string(), amount: z.number(), reason: z.string() }),
  approval: () => ({ risk: 'high', summary: 'refund' }),
  execute: () => ({}),
});

const approval = (over: Partial<Approval> = {}) =>
  ({ id: 'r1.2.0', runId: 'r1', step: 2, toolName: 'refund', status: 'approved', toolDigest: 'v1-digest', ...over }) as Approval;

/** The fleet this worker (version `own`) sees: cached, and fresh when read again. */
function fleet(own: string, known: FleetVersions, fresh: FleetVersions = known) {
  const enqueued: Array<{ name: string; job: unknown; opts: unknown }> = [];
  const versions: StepVersions = {
    own,
    known: () => known,
    fresh: async () => fresh,
    enqueue: async (name, job, opts) => {
      enqueued.push({ name, job, opts });
    },
  };
  return { versions, enqueued };
}

function deps(versions: StepVersions | undefined, store: Partial<RunStore> = {}) {
  const metrics = createMetrics('test');
  const { applier, applied } = recordingApplier();
  const d: PlaceDeps = {
    store: slice<RunStore>('store', store),
    applier,
    metrics,
    logger: silentLogger,
    tools: new Map<string, Tool>([[refundV2.name, refundV2]]),
    clock,
    ...(versions ? { versions } : {}),
  };
  return { d, applied, metrics };
}

describe('place', () => {
  it('runs every step on a worker that knows no versions (nothing read, nothing written)', async () => {
    const { d, applied } = deps(undefined);
    expect(await placeRun(d, run({ appVersion: 'v1' }), [])).toBe('own');
    expect(applied).toEqual([]);
  });

  it('runs the step of a run on its own version, and one the cache misplaced once the fresh fleet says it is its own', async () => {
    expect(await placeRun(deps(fleet('v1', { upgrades: {} }).versions).d, run({ appVersion: 'v1' }), [])).toBe('own');
    // The cache still says v1 goes to v2; the fresh read says the upgrade was undone.
    const stale = fleet('v1', { upgrades: { v1: 'v2' } }, { upgrades: {} });
    const { d, applied } = deps(stale.versions);
    expect(await placeRun(d, run({ appVersion: 'v1' }), [])).toBe('own');
    expect([applied, stale.enqueued]).toEqual([[], []]);
  });

  it("sends the step of another version's run on to that version's workers, as a repair job routed there", async () => {
    const f = fleet('v2', { upgrades: {} });
    const { d, applied, metrics } = deps(f.versions);
    expect(await placeRun(d, run({ appVersion: 'v1' }), [])).toBe('rerouted');
    expect(f.enqueued).toEqual([
      { name: 'repair', job: { runId: 'r1', step: 2, version: 5, tenantId: 'acme' }, opts: { route: { appVersion: 'v1' } } },
    ]);
    expect(applied).toEqual([]);
    expect((await metrics.versionReroutes.get()).values[0]?.value).toBe(1);
  });

  it('moves a run an upgrade routed here, withdrawing in the same commit the approvals whose tool changed', async () => {
    const f = fleet('v2', { upgrades: { v1: 'v2' } });
    const { d, applied } = deps(f.versions);
    const changed = approval();
    const same = approval({ id: 'r1.2.1', toolDigest: toolDigest(refundV2) });
    expect(await placeRun(d, run({ appVersion: 'v1' }), [changed, same])).toBe('moved');
    expect(applied).toHaveLength(1);
    const { outcome } = applied[0]!;
    expect(outcome.kind).toBe('upgrade');
    if (outcome.kind !== 'upgrade') throw new Error('unreachable');
    expect(outcome.change.to.appVersion).toBe('v2');
    expect(outcome.change.approvals).toEqual([
      expect.objectContaining({ id: 'r1.2.0', status: 'withdrawn', reason: 'version_changed', decidedAt: clock.iso() }),
    ]);
    expect(outcome.followUps.feed?.map((e) => [e.type, e.approvalId])).toEqual([['approval.withdrawn', 'r1.2.0']]);
    expect(f.enqueued).toEqual([]);
  });

  it("judges an approved plan's approval from an earlier step too, reading it only when the step did not", async () => {
    const f = fleet('v2', { upgrades: { v1: 'v2' } });
    const planApproval = approval({ id: 'r1.0.0', step: 0, kind: 'plan', toolName: 'plan' });
    const asked: string[][] = [];
    const { d, applied } = deps(f.versions, {
      async approvalsById(ids: readonly string[]) {
        asked.push([...ids]);
        return [planApproval];
      },
    });
    const planned = run({ appVersion: 'v1', plan: { steps: [], status: 'approved', approvalId: 'r1.0.0', done: [] } });
    expect(await placeRun(d, planned, [])).toBe('moved');
    expect(asked).toEqual([['r1.0.0']]);
    const { outcome } = applied[0]!;
    expect(outcome.kind === 'upgrade' && outcome.change.approvals?.map((a) => [a.id, a.status])).toEqual([['r1.0.0', 'withdrawn']]);
  });
});
