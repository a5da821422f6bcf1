import type { Approval, RunRecord, StepRecord } from '@rein/contract';
import { AgentCatalog, defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApprovalFeed } from '../../src/adapters/redis/approval-feed.js';
import type { RunStore } from '../../src/adapters/redis/run-store.js';
import type { TenantQuotas } from '../../src/adapters/redis/tenant-quotas.js';
import { afterDecision, afterTools, type Transition } from '../../src/policy/step/step-policy.js';
import { StaleStepError } from '../../src/shared/errors.js';
import type { PiiMasker } from '../../src/shared/guards/pii-masker.js';
import { createMetrics, type Metrics } from '../../src/shared/metrics.js';
import { type ApplyStepDeps, createStepApply } from '../../src/step/apply-step.js';
import { type ApplierDeps, createTransitionApplier, type TransitionApplier } from '../../src/step/apply-transition.js';
import type { StepVersions } from '../../src/step/step-deps.js';
import { clock, decision, facts, record, recordingApplier, run, silentLogger, slice } from './support.js';

/**
 * Apply (step/apply-step.ts through the one applier of step/apply-transition.ts): the step's
 * Transition is committed, and what the commit wrote — not what was attempted — is counted
 * (policy/step/commit-facts.ts) and followed up, in the applier's one order.
 */

const pay = defineTool({ name: 'pay', description: 'pay', kind: 'write', parameters: z.object({}), execute: () => ({}) });
const tools = new Map<string, Tool>([[pay.name, pay]]);
const agents = new AgentCatalog([], 'order-assistant', 'handed to a person');
const masker = slice<PiiMasker>('masker', { maskText: (text) => text });

const answered = (): Transition => afterDecision(facts({ decision: decision({ toolCalls: [], content: 'done' }) })) as Transition;
const approval = {
  id: 'r1.2.0',
  runId: 'r1',
  step: 2,
  toolName: 'pay',
  summary: 's',
  risk: 'high',
  status: 'pending',
  expiresAt: '2026-01-01T00:05:00.000Z',
} as Approval;

function stepApply(applier: TransitionApplier, over: Partial<ApplyStepDeps> = {}) {
  return createStepApply({ store: slice<RunStore>('store', {}), applier, tools, agents, masker, logger: silentLogger, clock, ...over });
}

describe('apply: the step', () => {
  it("commits the step's Transition and names what became of the run", async () => {
    const { applier, applied } = recordingApplier();
    const apply = stepApply(applier);
    expect(await apply.applied(run(), answered(), silentLogger)).toBe('finished');
    expect(await apply.applied(run(), afterTools(facts(), [record()], []), silentLogger)).toBe('continued');
    const parked = afterTools(facts(), [record({ outcome: 'awaiting_approval', approvalId: approval.id })], [approval]);
    expect(await apply.applied(run(), parked, silentLogger)).toBe('parked');
    expect(applied.map((a) => a.outcome.kind)).toEqual(['step', 'step', 'step']);
  });

  it('stamps the step record with the app version of the worker that ran it', async () => {
    const { applier, applied } = recordingApplier();
    const versions = slice<StepVersions>('versions', { own: 'v2' });
    await stepApply(applier, { versions }).applied(run(), answered(), silentLogger);
    const { outcome } = applied[0]!;
    expect(outcome.kind === 'step' && outcome.transition.change.step?.appVersion).toBe('v2');
  });

  it("records a write's call after the finish when a terminal commit (a cancel) beat the step's, and still fails the step", async () => {
    const recorded: StepRecord[] = [];
    const lost = () => Promise.reject(new StaleStepError('cancelled meanwhile'));
    const { applier } = recordingApplier({
      apply: lost,
      async recordAfterFinish(_runId, step) {
        recorded.push(step);
        return true;
      },
    });
    const apply = stepApply(applier);
    const wrote = [record({ name: 'pay', arguments: {} })];
    await expect(apply.afterTools(run(), afterTools(facts(), wrote, []), wrote, silentLogger)).rejects.toBeInstanceOf(StaleStepError);
    expect(recorded.map((s) => s.toolCalls.map((c) => c.name))).toEqual([['pay']]);
    // Only reads ran: there is nothing the saga or a person would need to find.
    const { applier: readsOnly } = recordingApplier({ apply: lost });
    await expect(stepApply(readsOnly).afterTools(run(), afterTools(facts(), [record()], []), [record()], silentLogger)).rejects.toThrow();
  });

  it('cancels a run whose ancestor ended, withdrawing its pending approvals', async () => {
    const { applier, applied } = recordingApplier();
    const store = slice<RunStore>('store', { approvals: async () => [approval] });
    expect(await stepApply(applier, { store }).cancelled(run({ status: 'pending_approval' }), 'run:root', silentLogger)).toBe('finished');
    const { outcome } = applied[0]!;
    expect(outcome.kind).toBe('cancel');
    if (outcome.kind !== 'cancel') throw new Error('unreachable');
    expect(outcome.change.to).toMatchObject({ status: 'cancelled' });
    expect(outcome.change.approvals?.map((a) => [a.id, a.status])).toEqual([['r1.2.0', 'withdrawn']]);
    expect(outcome.followUps.feed?.map((e) => e.approvalId)).toEqual(['r1.2.0']);
  });

  it('fails a live run that can make no progress, and leaves a finished one (or one the caller excludes) as it is', async () => {
    const runs = new Map<string, RunRecord>([
      ['live', run({ id: 'live' })],
      ['done', run({ id: 'done', status: 'succeeded' })],
    ]);
    const { applier, applied } = recordingApplier();
    const apply = stepApply(applier, { store: slice<RunStore>('store', { get: async (id) => runs.get(id) ?? null }) });
    expect(await apply.fail('live', 'max_steps', 'attempts exhausted')).toBe(true);
    expect(await apply.fail('done', 'max_steps', 'attempts exhausted')).toBe(false);
    expect(await apply.fail('live', 'deadline', 'late', (r) => r.status === 'queued')).toBe(false);
    expect(applied.map((a) => a.outcome.kind === 'step' && a.outcome.transition.change.to)).toEqual([
      expect.objectContaining({ id: 'live', status: 'failed', reason: 'max_steps', finalAnswer: 'handed to a person' }),
    ]);
  });
});

/** The applier over in-memory stand-ins that write down, in order, what reaches them. */
function applierOver(opts: { stale?: boolean } = {}) {
  const calls: string[] = [];
  const note =
    <T>(name: string, value?: T) =>
    async () => {
      calls.push(name);
      return value as T;
    };
  const metrics = createMetrics('test');
  const deps: ApplierDeps = {
    store: slice<RunStore>('store', {
      async compareAndSet(c) {
        calls.push('compareAndSet');
        if (opts.stale) throw new StaleStepError('another attempt committed first');
        return { ...c.to, version: c.from.version + 1 };
      },
      afterCommit: note('afterCommit'),
    }),
    quotas: slice<TenantQuotas>('quotas', { charge: note('charge', 0) }),
    feed: slice<ApprovalFeed>('feed', {
      stage: async (_tenant, events) => void calls.push(`stage ${events.length}`),
      publish: async (_tenant, event) => void calls.push(`publish ${event.type}`),
    }),
    enqueue: async (name, _job, o) => void calls.push(`enqueue ${name}${o?.delayMs !== undefined ? ' delayed' : ''}`),
    metrics,
    now: clock.now,
    knownTool: (name) => name !== 'typo',
    approvalLoad: { slaMs: 60_000, decider: () => 'company' },
    hooks: { finished: note('finished'), changed: note('changed') },
    audit: { append: note('audit') },
  };
  return { applier: createTransitionApplier(deps), calls, metrics };
}

const counted = async (metric: Metrics[keyof Metrics]) =>
  ((await (metric as { get(): Promise<{ values: Array<{ labels: object; value: number }> }> }).get()).values ?? []).map((v) => [
    v.labels,
    v.value,
  ]);

describe('apply: the one applier', () => {
  it("commits before the charge lands, runs a finish's hooks before the indexes, and counts, logs and follows up after", async () => {
    const { applier, calls } = applierOver();
    await applier.apply(run(), { kind: 'step', transition: answered(), log: silentLogger });
    expect(calls).toEqual(['stage 0', 'charge', 'compareAndSet', 'finished', 'afterCommit', 'audit']);
  });

  it("enqueues a continued run's next step, and announces and times a park's approvals, once committed", async () => {
    const go = applierOver();
    await go.applier.apply(run(), { kind: 'step', transition: afterTools(facts(), [record()], []), log: silentLogger });
    expect(go.calls).toEqual(['stage 0', 'charge', 'compareAndSet', 'afterCommit', 'audit', 'enqueue step']);
    const park = applierOver();
    const parked = afterTools(facts(), [record({ outcome: 'awaiting_approval', approvalId: approval.id })], [approval]);
    await park.applier.apply(run(), { kind: 'step', transition: parked, log: silentLogger });
    expect(park.calls).toEqual([
      'stage 1',
      'charge',
      'compareAndSet',
      'afterCommit',
      'audit',
      'publish approval.requested',
      'enqueue expire delayed',
      'changed',
    ]);
  });

  it("counts what the commit wrote: each call by outcome, an uncertain effect, a park's new approvals, the step", async () => {
    const { applier, metrics } = applierOver();
    const records = [
      record({ outcome: 'uncertain', name: 'pay', arguments: {} }),
      record({ id: 'c2', name: 'typo', outcome: 'unknown_tool' }),
      record({ id: 'c3', outcome: 'awaiting_approval', approvalId: approval.id }),
    ];
    await applier.apply(run(), { kind: 'step', transition: afterTools(facts(), records, [approval]), log: silentLogger });
    expect(await counted(metrics.toolCalls)).toEqual([
      [{ tool: 'pay', outcome: 'uncertain' }, 1],
      [{ tool: 'unknown', outcome: 'unknown_tool' }, 1],
      [{ tool: 'search_policy', outcome: 'awaiting_approval' }, 1],
    ]);
    expect(await counted(metrics.effectsUncertain)).toEqual([[{ tool: 'pay' }, 1]]);
    expect(await counted(metrics.approvalsCreated)).toEqual([[{ tool: 'pay', risk: 'high' }, 1]]);
    expect(await counted(metrics.steps)).toEqual([[{ outcome: 'parked' }, 1]]);
  });

  it('counts nothing, publishes nothing and enqueues nothing for a commit another attempt beat', async () => {
    const { applier, calls, metrics } = applierOver({ stale: true });
    const t = afterTools(facts(), [record({ outcome: 'uncertain', name: 'pay', arguments: {} })], []);
    await expect(applier.apply(run(), { kind: 'step', transition: t, log: silentLogger })).rejects.toBeInstanceOf(StaleStepError);
    expect(calls).toEqual(['stage 0', 'charge', 'compareAndSet']);
    expect([await counted(metrics.toolCalls), await counted(metrics.effectsUncertain), await counted(metrics.steps)]).toEqual([[], [], []]);
  });
});
