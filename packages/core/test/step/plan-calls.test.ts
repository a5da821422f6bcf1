import type { StepRecord } from '@rein/contract';
import { AgentCatalog, type AgentProfile, defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunStore } from '../../src/adapters/redis/run-store.js';
import type { PlannedCall } from '../../src/policy/step/call-plan.js';
import { EMPTY_GUARD } from '../../src/policy/step/loop-guard.js';
import type { PiiMasker } from '../../src/shared/guards/pii-masker.js';
import { createAgentViews } from '../../src/step/agent-views.js';
import { type PlanCallsDeps, planStep } from '../../src/step/plan-calls.js';
import { clock, decision, NOW, record, run, slice } from './support.js';

/**
 * Plan the calls (step/plan-calls.ts): the journaled reply becomes a conclusion (an answer, a
 * stop, a planning step's verdict) or one planned entry per call — run it, refuse it with an
 * observation, or wait for its approval. The call plan's own rules are call-plan.test.ts's.
 */

const search = defineTool({
  name: 'search_policy',
  description: 'search the policies',
  kind: 'read',
  parameters: z.object({ query: z.string() }),
  execute: () => ({}),
});
const refund = defineTool({
  name: 'refund',
  description: 'refund (write, approved by a person)',
  kind: 'write',
  parameters: z.object({ orderNo: z.string(), amount: z.number() }),
  approval: (a) => ({ risk: 'high', summary: `refund ${a.amount}` }),
  execute: () => ({}),
});
const tools = new Map<string, Tool>([search, refund].map((t) => [t.name, t]));
const profile = { name: 'order-assistant', instructions: '', tools: ['search_policy', 'refund'] } as unknown as AgentProfile;
const planner = { ...profile, plan: { minSteps: 1, maxSteps: 3 } } as AgentProfile;

/** The slice planStep takes; `earlier`: the run's committed steps, for a run that keeps no guard. */
function deps(earlier: StepRecord[] = []) {
  const asked: string[] = [];
  const d: PlanCallsDeps = {
    store: slice<RunStore>('store', {
      async steps(runId) {
        asked.push(runId);
        return earlier;
      },
    }),
    tools,
    agents: new AgentCatalog([profile], profile.name, 'handed to a person'),
    masker: slice<PiiMasker>('masker', { maskText: (text) => text }),
    guards: { repeatLimit: 2, toolFailureLimit: 3, toolResultMaxChars: 2000 },
    prices: {},
    approvalTtlMs: 60_000,
    views: createAgentViews(tools, new AgentCatalog([profile], profile.name)),
    clock,
  };
  return { d, asked };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });
const kinds = (calls: PlannedCall[]) => calls.map((p) => [p.call.id, p.kind]);

describe('plan the calls', () => {
  it('concludes an answer without planning any call', async () => {
    const plan = await planStep(deps().d, run({ guard: EMPTY_GUARD }), profile, decision({ toolCalls: [], content: 'done' }), [], 0);
    expect(plan.kind).toBe('concluded');
    expect(plan.kind === 'concluded' && plan.transition).toMatchObject({ kind: 'finish', status: 'succeeded', reason: 'completed' });
  });

  it('parks a write that needs approval on the approval it asks for, and runs a read', async () => {
    const reply = decision({
      toolCalls: [call('c1', 'search_policy', { query: 'refunds' }), call('c2', 'refund', { orderNo: '7', amount: 5 })],
    });
    const plan = await planStep(deps().d, run({ guard: EMPTY_GUARD }), profile, reply, [], 0);
    if (plan.kind !== 'calls') throw new Error('concluded');
    expect(kinds(plan.calls)).toEqual([
      ['c1', 'run'],
      ['c2', 'await_approval'],
    ]);
    const parked = plan.calls[1] as Extract<PlannedCall, { kind: 'await_approval' }>;
    expect(parked.newApproval).toMatchObject({
      id: 'r1.2.1',
      toolName: 'refund',
      arguments: { orderNo: '7', amount: 5 },
      status: 'pending',
    });
    expect(parked.newApproval?.expiresAt).toBe(new Date(NOW + 60_000).toISOString());
  });

  it('runs the write once its approval was granted, and refuses it with the reason once rejected', async () => {
    const reply = decision({ toolCalls: [call('c2', 'refund', { orderNo: '7', amount: 5 })] });
    const first = await planStep(deps().d, run({ guard: EMPTY_GUARD }), profile, reply, [], 0);
    const asked = first.kind === 'calls' && (first.calls[0] as Extract<PlannedCall, { kind: 'await_approval' }>).newApproval;
    if (!asked) throw new Error('no approval asked');
    const parked = run({ status: 'pending_approval', guard: EMPTY_GUARD });
    const approved = await planStep(deps().d, parked, profile, reply, [{ ...asked, status: 'approved', decidedBy: 'bob' }], 0);
    expect(approved.kind === 'calls' && kinds(approved.calls)).toEqual([['c2', 'run']]);
    const rejected = await planStep(
      deps().d,
      parked,
      profile,
      reply,
      [{ ...asked, status: 'rejected', decidedBy: 'bob', comment: 'no' }],
      0,
    );
    expect(rejected.kind === 'calls' && rejected.calls[0]).toMatchObject({
      kind: 'refuse',
      outcome: 'rejected',
      observation: 'Not executed: rejected by bob: no',
    });
  });

  it('refuses a call whose arguments are not JSON with an observation, keeping what the model sent', async () => {
    const plan = await planStep(
      deps().d,
      run({ guard: EMPTY_GUARD }),
      profile,
      decision({ toolCalls: [call('c1', 'search_policy', '{query:')] }),
      [],
      0,
    );
    expect(plan.kind === 'calls' && plan.calls[0]).toMatchObject({ kind: 'refuse', outcome: 'invalid_arguments', args: '{query:' });
  });

  it('gives every call of the reply an id of its own before planning', async () => {
    const twice = decision({ toolCalls: [call('c1', 'search_policy', { query: 'a' }), call('c1', 'search_policy', { query: 'b' })] });
    const plan = await planStep(deps().d, run({ guard: EMPTY_GUARD }), profile, twice, [], 0);
    expect(plan.kind === 'calls' && plan.calls.map((p) => p.call.id)).toEqual(['c1', 'c1#1']);
    expect(plan.kind === 'calls' && plan.facts().decision.toolCalls.map((c) => c.id)).toEqual(['c1', 'c1#1']);
  });

  it("rebuilds the loop guard from a run's earlier steps when the run keeps none, and stops a call repeated past the limit", async () => {
    const asked = record({ arguments: { query: 'refund' } });
    const earlier = [0, 1].map((index) => ({ index, toolCalls: [{ ...asked, id: `e${index}` }] }) as StepRecord);
    const { d, asked: read } = deps(earlier);
    const plan = await planStep(d, run(), profile, decision(), [], 0);
    expect(read).toEqual(['r1']);
    expect(plan.kind === 'concluded' && plan.transition).toMatchObject({ kind: 'finish', reason: 'repeated_call' });
    // A first step has no earlier steps to read; a run that keeps its guard is not read either.
    const fresh = deps(earlier);
    await planStep(fresh.d, run({ step: 0 }), profile, decision({ step: 0 }), [], 0);
    await planStep(fresh.d, run({ guard: EMPTY_GUARD }), profile, decision(), [], 0);
    expect(fresh.asked).toEqual([]);
  });

  it("does not act on a reply that came after the run's deadline: the calls are recorded as not run", async () => {
    const late = run({ guard: EMPTY_GUARD, deadlineAt: new Date(NOW - 1).toISOString() });
    const plan = await planStep(deps().d, late, profile, decision(), [], 0);
    if (plan.kind !== 'concluded') throw new Error('planned calls');
    expect(plan.transition).toMatchObject({ kind: 'finish', reason: 'deadline' });
    expect(plan.transition.change.step?.toolCalls.map((c) => c.outcome)).toEqual(['rejected']);
  });

  it("answers a planning agent's malformed plan with a repair turn, and ends the run when the repair is malformed too", async () => {
    const first = await planStep(deps().d, run({ step: 0 }), planner, decision({ step: 0, toolCalls: [], content: 'not json' }), [], 0);
    expect(first.kind === 'concluded' && first.transition.kind).toBe('continue');
    expect(first.kind === 'concluded' && first.transition.change.messages?.[1]?.content).toMatch(/^Your plan is invalid: /);
    const again = await planStep(deps().d, run({ step: 1 }), planner, decision({ step: 1, toolCalls: [], content: 'still not' }), [], 0);
    expect(again.kind === 'concluded' && again.transition).toMatchObject({ kind: 'finish', status: 'failed', reason: 'plan_invalid' });
  });
});
