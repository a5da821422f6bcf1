import type { Approval, Decision, RunRecord, ToolCallRecord } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { retryOnStale } from '../src/policy/run/run-transitions.js';
import { EMPTY_GUARD, guardFromHistory } from '../src/policy/step/loop-guard.js';
import {
  afterDecision,
  afterPlan,
  afterTools,
  completionRoom,
  EVENT_OBSERVATION_CHARS,
  exhaustedBudget,
  gate,
  type StepFacts,
} from '../src/policy/step/step-policy.js';
import { StaleStepError } from '../src/shared/errors.js';

/** The step policy as pure functions: every case here runs without Redis, a model or a clock. */

const NOW = Date.parse('2026-01-01T00:00:10.000Z');

const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  id: 'r1',
  traceId: '0'.repeat(32),
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user'],
  agent: 'order-assistant',
  input: 'hello',
  metadata: {},
  limits: { maxSteps: 8, maxTokens: 10_000, timeoutMs: 60_000 },
  status: 'running',
  step: 2,
  usage: { promptTokens: 200, completionTokens: 20, totalTokens: 220 },
  costUsd: 0,
  pendingApprovals: [],
  version: 5,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  deadlineAt: '2026-01-01T00:01:00.000Z',
  ...over,
});

const decision = (over: Partial<Decision> = {}): Decision => ({
  schemaVersion: 1,
  step: 2,
  model: 'm',
  content: 'thinking',
  toolCalls: [{ id: 'c1', name: 'search_policy', arguments: '{"query":"refund"}' }],
  usage: { promptTokens: 100, completionTokens: 10 },
  durationMs: 3,
  createdAt: '2026-01-01T00:00:09.000Z',
  ...over,
});

const facts = (over: Partial<StepFacts> = {}): StepFacts => ({
  run: run(),
  decision: decision(),
  guard: EMPTY_GUARD,
  limits: { repeatLimit: 2, toolFailureLimit: 3, toolResultMaxChars: 2000 },
  prices: { m: { promptPerMTok: 1_000_000, completionPerMTok: 2_000_000 } },
  mask: (text) => text.replace(/\d{11}/g, '***'),
  handoff: 'handed to a person',
  now: NOW,
  durationMs: 7,
  ...over,
});

const record = (over: Partial<ToolCallRecord> = {}): ToolCallRecord => ({
  id: 'c1',
  name: 'search_policy',
  arguments: { query: 'refund' },
  outcome: 'ok',
  observation: 'policy text',
  durationMs: 1,
  ...over,
});

describe('step policy: gate', () => {
  it('skips a job for a finished run or a future step, and only ensures the next job for a past one', () => {
    expect(gate(null, 0, [], null).kind).toBe('skip');
    expect(gate(run({ status: 'succeeded' }), 2, [], null).kind).toBe('skip');
    expect(gate(run(), 3, [], null).kind).toBe('skip');
    expect(gate(run(), 1, [], null).kind).toBe('already_committed');
  });

  it('keeps a parked step parked while an approval of it is pending, and acts on a journaled decision', () => {
    const pending = { step: 2, status: 'pending' } as Approval;
    expect(gate(run({ status: 'pending_approval' }), 2, [pending], null).kind).toBe('parked');
    expect(gate(run({ status: 'pending_approval' }), 2, [{ ...pending, status: 'approved' }], decision())).toMatchObject({ kind: 'act' });
    expect(gate(run(), 2, [], null).kind).toBe('decide');
  });
});

describe('step policy: budgets before spending', () => {
  const ok = { now: NOW, quotaExhausted: false, waitingOn: null };
  it('checks the deadline, steps, tokens, cost and the tenant quota in that order', () => {
    expect(exhaustedBudget(run(), ok)).toBeNull();
    expect(exhaustedBudget(run({ deadlineAt: '2026-01-01T00:00:05.000Z' }), ok)).toBe('deadline');
    expect(exhaustedBudget(run({ deadlineAt: '2026-01-01T00:00:05.000Z' }), { ...ok, waitingOn: 'model_unavailable' })).toBe(
      'model_unavailable',
    );
    expect(exhaustedBudget(run({ step: 8 }), ok)).toBe('max_steps');
    expect(exhaustedBudget(run({ usage: { promptTokens: 0, completionTokens: 0, totalTokens: 10_000 } }), ok)).toBe('token_budget');
    expect(exhaustedBudget(run({ costUsd: 1, limits: { ...run().limits, maxCostUsd: 1 } }), ok)).toBe('cost_budget');
    expect(exhaustedBudget(run(), { ...ok, quotaExhausted: true })).toBe('tenant_quota');
  });

  it('never asks for more completion tokens than the budget has left, and skips a call that cannot afford 16', () => {
    expect(completionRoom(run(), 1000, 500)).toBe(1000);
    expect(completionRoom(run(), 1000, 9_700)).toBe(80);
    expect(completionRoom(run(), 1000, 9_770)).toBeNull();
  });
});

describe('step policy: transitions', () => {
  it('finishes with the masked answer when the model calls no tool, charging the step once', () => {
    const t = afterDecision(facts({ decision: decision({ toolCalls: [], content: 'call 13800138000' }) }));
    expect(t).toMatchObject({
      kind: 'finish',
      status: 'succeeded',
      reason: 'completed',
      charge: { model: 'm', promptTokens: 100, costUsd: 120 },
    });
    if (t.kind !== 'finish') throw new Error('unreachable');
    expect(t.change.to).toMatchObject({ status: 'succeeded', finalAnswer: 'call ***', step: 3, usage: { totalTokens: 330 } });
    expect(t.change.events?.map((e) => e.type)).toEqual(['step.finished', 'run.finished']);
    expect(t.change.step).toMatchObject({ index: 2, durationMs: 7 });
  });

  it('does not charge a resumed step again (it was charged when it parked)', () => {
    const t = afterDecision(facts({ run: run({ status: 'pending_approval' }), decision: decision({ toolCalls: [] }) }));
    expect(t.kind === 'finish' && t.charge).toBeFalsy();
    expect(t.kind === 'finish' && t.change.to.usage.totalTokens).toBe(220);
  });

  it('never acts on a reply that came after the deadline: no success, no tool, the tokens still charged', () => {
    const late = { run: run({ deadlineAt: '2026-01-01T00:00:05.000Z' }) };
    const answer = afterDecision(facts({ ...late, decision: decision({ toolCalls: [] }) }));
    expect(answer).toMatchObject({ kind: 'finish', status: 'failed', reason: 'deadline', charge: { promptTokens: 100 } });
    const call = afterDecision(facts(late));
    expect(call).toMatchObject({ kind: 'finish', reason: 'deadline' });
    expect(call.kind === 'finish' && call.change.step?.toolCalls.map((c) => c.outcome)).toEqual(['rejected']);
    // Time parked for approval does not count: a resumed step past its nominal deadline still acts.
    const resumed = facts({
      run: run({ status: 'pending_approval', deadlineAt: '2026-01-01T00:00:05.000Z', parkedAt: '2026-01-01T00:00:01.000Z' }),
    });
    expect(afterDecision(resumed).kind).toBe('tools');
  });

  it('stops a call repeated for the limit-th time before any tool runs, and points read repeats at the earlier result', () => {
    const twice = guardFromHistory([
      { index: 0, toolCalls: [record({ id: 'a' })] },
      { index: 1, toolCalls: [record({ id: 'b' })] },
    ]);
    expect(afterDecision(facts({ guard: twice }))).toMatchObject({ kind: 'finish', reason: 'repeated_call' });
    const once = guardFromHistory([{ index: 0, toolCalls: [record({ id: 'a' })] }]);
    const next = afterDecision(facts({ guard: once }));
    expect(next.kind === 'tools' && next.earlier.get(0)).toEqual([0, 'a']);
  });

  it('continues with the observations as tool messages and the guard advanced on the run', () => {
    const t = afterTools(facts(), [record()], []);
    expect(t.kind).toBe('continue');
    expect(t.change.to).toMatchObject({ status: 'running', step: 3, pendingApprovals: [] });
    expect(t.change.to.guard?.calls).toEqual({ [Object.keys(t.change.to.guard?.calls ?? {})[0] as string]: { n: 1, ok: [2, 'c1'] } });
    expect(t.change.messages?.map((m) => m.role)).toEqual(['assistant', 'tool']);
  });

  it('announces long tool results in events as a preview; the step record (the trace) keeps them whole', () => {
    const long = 'x'.repeat(EVENT_OBSERVATION_CHARS + 100);
    const t = afterTools(facts(), [record({ observation: long })], []);
    const event = t.change.events?.find((e) => e.type === 'tool.result');
    expect(event?.data.observation).toBe(`${'x'.repeat(EVENT_OBSERVATION_CHARS)}… (100 more characters in the trace)`);
    expect(t.change.step?.toolCalls[0]?.observation).toBe(long);
  });

  it('does not count time parked against the deadline', () => {
    const t = afterTools(facts({ run: run({ status: 'pending_approval', parkedAt: '2026-01-01T00:00:04.000Z' }) }), [record()], []);
    expect(t.change.to.deadlineAt).toBe('2026-01-01T00:01:06.000Z');
    expect(t.change.to).not.toHaveProperty('parkedAt');
  });

  it('parks with the new approvals when a call awaits one, keeping the guard as it was', () => {
    const approval = { id: 'r1.2.0', runId: 'r1', step: 2, toolName: 'submit_refund', summary: 's', risk: 'high' } as Approval;
    const t = afterTools(facts(), [record({ outcome: 'awaiting_approval', approvalId: 'r1.2.0' })], [approval]);
    expect(t).toMatchObject({ kind: 'park', newApprovals: [approval] });
    expect(t.change.to).toMatchObject({ status: 'pending_approval', pendingApprovals: ['r1.2.0'], parkedAt: '2026-01-01T00:00:10.000Z' });
    expect(t.change.to.guard).toBeUndefined();
  });

  it('stops the run when one tool has failed the limit-th time in a row', () => {
    const failing = guardFromHistory([{ index: 0, toolCalls: [record({ outcome: 'error' }), record({ outcome: 'error' })] }]);
    const t = afterTools(facts({ guard: failing }), [record({ outcome: 'error', arguments: { query: 'other' } })], []);
    expect(t).toMatchObject({ kind: 'finish', status: 'failed', reason: 'tool_failures' });
    expect(t.change.to.finalAnswer).toBe('handed to a person');
  });
});

describe('retryOnStale', () => {
  it('re-runs an attempt that lost its commit, at most the given number of times', async () => {
    let calls = 0;
    await expect(
      retryOnStale(async () => {
        calls++;
        if (calls < 3) throw new StaleStepError('lost');
        return 'done';
      }),
    ).resolves.toBe('done');
    calls = 0;
    await expect(
      retryOnStale(async () => {
        calls++;
        throw new StaleStepError('always');
      }, 4),
    ).rejects.toBeInstanceOf(StaleStepError);
    expect(calls).toBe(4);
  });

  it('does not retry other errors', async () => {
    let calls = 0;
    await expect(
      retryOnStale(async () => {
        calls++;
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(calls).toBe(1);
  });
});

describe('step policy: plans', () => {
  const plan = {
    steps: [
      { step: 1, action: 'search_policy', args: { query: 'refund' }, desc: 'look', risk: 'low' as const },
      { step: 2, action: 'search_policy', args: { query: 'late' }, desc: 'look', risk: 'low' as const },
    ],
    status: 'approved' as const,
    approvalId: 'r1.0.0',
    done: [],
  };

  it('marks the plan steps that calls carried out, not those that failed', () => {
    const t = afterTools(facts({ run: run({ plan }) }), [record({ planStep: 1 }), record({ id: 'c2', planStep: 2, outcome: 'error' })], []);
    expect(t.change.to.plan?.done).toEqual([1]);
  });

  it('keeps the plan as it was when no call carried out a step', () => {
    expect(afterTools(facts({ run: run({ plan }) }), [record()], []).change.to.plan).toEqual(plan);
  });

  it('sends a planning reply to the log without tool calls, and a repair note after it', () => {
    const t = afterPlan(facts({ decision: decision({ content: 'not a plan' }) }), { kind: 'repair', problems: ['not JSON'] });
    expect(t.kind).toBe('continue');
    expect(t.change.messages).toEqual([
      { role: 'assistant', content: 'not a plan' },
      { role: 'system', content: 'Your plan is invalid: not JSON. Reply with a corrected plan only.' },
    ]);
    const failed = afterPlan(facts(), { kind: 'invalid', problems: ['still not JSON'] });
    expect(failed).toMatchObject({ kind: 'finish', status: 'failed', reason: 'plan_invalid' });
  });
});
