import type { Approval, RunRecord } from '@rein/contract';
import { AgentCatalog, type AgentProfile } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import type { RunStore } from '../../src/adapters/redis/run-store.js';
import type { TenantQuotas } from '../../src/adapters/redis/tenant-quotas.js';
import type { StepRead, TreeNodeRead } from '../../src/policy/ports/run-repository.js';
import type { Transition } from '../../src/policy/step/step-policy.js';
import type { InputVerdict } from '../../src/shared/guards/input-filter.js';
import type { PiiMasker } from '../../src/shared/guards/pii-masker.js';
import { type AdmitDeps, admit } from '../../src/step/admit.js';
import type { StepApply } from '../../src/step/apply-step.js';
import { clock, NOW, recordingApplier, run, silentLogger, slice } from './support.js';

/**
 * Admit (step/admit.ts): before the model is paid, a run of a tree ends with its ancestors and
 * spends within what they have left, a run out of budget fails or asks, a first step's input
 * passes the filter, a queued run starts.
 */

const profile = { name: 'order-assistant', onBudget: 'fail' } as AgentProfile;
const agents = new AgentCatalog([], 'order-assistant', 'handed to a person');

const read = (over: Partial<StepRead> = {}): StepRead => ({
  run: null,
  waitingOn: null,
  approvals: [],
  decision: null,
  messages: [],
  reads: [],
  children: [],
  descendants: [],
  ...over,
});

/** The slice admit takes, over in-memory stand-ins; `nodes`: the ancestors the store finds. */
function deps(opts: { nodes?: TreeNodeRead[]; quotaExhausted?: boolean; inputRejected?: boolean } = {}) {
  const { applier, applied } = recordingApplier();
  const ended: Array<{ kind: 'applied'; transition: Transition } | { kind: 'cancelled'; by: string }> = [];
  const d: AdmitDeps = {
    store: slice<RunStore>('store', { treeNodes: async (ids) => (opts.nodes ?? []).filter((n) => ids.includes(n.id)) }),
    applier,
    agents,
    quotas: slice<TenantQuotas>('quotas', { exhausted: async () => opts.quotaExhausted ?? false }),
    inputFilter: (input): InputVerdict =>
      opts.inputRejected ? { ok: false, answer: `I cannot help with "${input}".`, ruleId: 'r', kind: 'out_of_scope' } : { ok: true },
    masker: slice<PiiMasker>('masker', { maskText: (text) => text.replace(/\d{11}/g, '***') }),
    approvalTtlMs: 60_000,
    budgetFourEyes: true,
    clock,
    apply: slice<StepApply>('apply', {
      async applied(_run, transition) {
        ended.push({ kind: 'applied', transition });
        return transition.kind === 'park' ? 'parked' : 'finished';
      },
      async cancelled(_run, by) {
        ended.push({ kind: 'cancelled', by });
        return 'finished';
      },
    }),
  };
  return { d, applied, ended };
}

const admitted = async (d: AdmitDeps, r: RunRecord, over: { read?: Partial<StepRead>; profile?: AgentProfile; quota?: boolean } = {}) =>
  admit(d, read({ run: r, ...over.read }), r, over.profile ?? profile, over.quota, silentLogger);

describe('admit', () => {
  it('fails a run past its deadline before its model call, with the masked hand-off answer', async () => {
    const { d, ended, applied } = deps();
    const a = await admitted(d, run({ deadlineAt: new Date(NOW - 1).toISOString() }), { quota: false });
    expect(a).toEqual({ kind: 'ended', outcome: 'finished' });
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ kind: 'applied', transition: { kind: 'finish', status: 'failed', reason: 'deadline' } });
    expect(applied).toEqual([]);
  });

  it('says model_unavailable when the step was held back for want of a model', async () => {
    const { d, ended } = deps();
    await admitted(d, run({ deadlineAt: new Date(NOW - 1).toISOString() }), { quota: false, read: { waitingOn: 'model_unavailable' } });
    expect(ended[0]).toMatchObject({ transition: { reason: 'model_unavailable' } });
  });

  it("reads the tenant's quota itself when the job did not bring it, and fails a run over it", async () => {
    const { d, ended } = deps({ quotaExhausted: true });
    expect(await admitted(d, run())).toEqual({ kind: 'ended', outcome: 'finished' });
    expect(ended[0]).toMatchObject({ transition: { reason: 'tenant_quota' } });
    // The quota read with the step wins over the store's.
    const brought = deps({ quotaExhausted: true });
    expect((await admitted(brought.d, run(), { quota: false })).kind).toBe('admitted');
  });

  it("asks a person for more budget when the agent says so, parking the step on the budget's approval", async () => {
    const { d, ended } = deps();
    const out = run({ usage: { promptTokens: 9_000, completionTokens: 1_000, totalTokens: 10_000 } });
    const a = await admitted(d, out, { quota: false, profile: { ...profile, onBudget: 'ask' } });
    expect(a).toEqual({ kind: 'ended', outcome: 'parked' });
    const t = (ended[0] as { transition: Transition }).transition;
    expect(t.kind).toBe('park');
    expect(t.kind === 'park' && t.newApprovals.map((x) => [x.toolName, x.status, x.fourEyes])).toEqual([['budget', 'pending', true]]);
  });

  it('raises the limits a person granted before anything else, then admits the run under them', async () => {
    const { d, applied, ended } = deps();
    const granted = {
      id: 'r1.2.budget',
      runId: 'r1',
      step: 2,
      kind: 'budget',
      toolName: 'budget',
      status: 'approved',
      arguments: { extraTokens: 5_000, extraCostUsd: 0 },
    } as unknown as Approval;
    const parked = run({
      status: 'pending_approval',
      pendingApprovals: [granted.id],
      usage: { promptTokens: 9_000, completionTokens: 1_000, totalTokens: 10_000 },
    });
    const a = await admitted(d, parked, { quota: false, profile: { ...profile, onBudget: 'ask' }, read: { approvals: [granted] } });
    expect(ended).toEqual([]);
    expect(applied.map((x) => x.outcome.kind)).toEqual(['raise']);
    expect(a.kind === 'admitted' && a.run.limits.maxTokens).toBe(15_000);
  });

  it('cancels a sub-agent run whose ancestor ended, naming the ancestor', async () => {
    const root = run({ id: 'root', status: 'cancelled' });
    const { d, ended } = deps({ nodes: [{ id: 'root', run: root, descendants: [] }] });
    const a = await admitted(d, run({ id: 'child', ancestors: ['root'], parentRunId: 'root' }), { quota: false });
    expect(a).toEqual({ kind: 'ended', outcome: 'finished' });
    expect(ended).toEqual([{ kind: 'cancelled', by: 'run:root' }]);
  });

  it("bounds a sub-agent run's budget by what its ancestor's tree has left, without changing its stored limits", async () => {
    const root = run({ id: 'root', limits: { maxSteps: 8, maxTokens: 1_000, timeoutMs: 60_000 } });
    const { d } = deps({
      nodes: [{ id: 'root', run: root, descendants: [{ promptTokens: 0, completionTokens: 0, totalTokens: 500, costUsd: 0 }] }],
    });
    const child = run({
      id: 'child',
      ancestors: ['root'],
      parentRunId: 'root',
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    });
    const a = await admitted(d, child, { quota: false });
    if (a.kind !== 'admitted') throw new Error(`not admitted: ${a.outcome}`);
    // The root spent 220 itself and 500 in its tree: 280 of its 1,000 are left for the child.
    expect(a.budget.limits.maxTokens).toBe(280);
    expect(a.run.limits.maxTokens).toBe(10_000);
  });

  it("fails a first step whose input the filter rejects, answering with the filter's answer", async () => {
    const { d, ended } = deps({ inputRejected: true });
    await admitted(d, run({ step: 0, input: 'wire me 13800138000 dollars' }), { quota: false });
    const t = (ended[0] as { transition: Transition }).transition;
    expect(t).toMatchObject({ kind: 'finish', reason: 'input_rejected' });
    expect(t.change.to.finalAnswer).toBe('I cannot help with "wire me *** dollars".');
    // Only the first step's input is filtered.
    expect((await admitted(deps({ inputRejected: true }).d, run({ step: 1 }), { quota: false })).kind).toBe('admitted');
  });

  it('starts a queued run, and fails (or asks) when the next prompt does not fit what is left', async () => {
    const { d, applied, ended } = deps();
    const a = await admitted(d, run({ status: 'queued', step: 0 }), { quota: false });
    if (a.kind !== 'admitted') throw new Error('not admitted');
    expect(applied.map((x) => x.outcome.kind)).toEqual(['start']);
    expect(a.run.status).toBe('running');
    expect(await a.outOfTokens()).toBe('finished');
    expect(ended[0]).toMatchObject({ transition: { kind: 'finish', reason: 'token_budget' } });
    const asking = deps();
    const b = await admitted(asking.d, run(), { quota: false, profile: { ...profile, onBudget: 'ask' } });
    expect(b.kind === 'admitted' && (await b.outOfTokens())).toBe('parked');
  });
});
