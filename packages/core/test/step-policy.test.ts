import { describe, expect, it } from 'vitest';
import { retryOnStale } from '../src/policy/run/run-transitions.js';
import { guardFromHistory } from '../src/policy/step/loop-guard.js';
import { afterDecision, afterPlan, completionRoom, exhaustedBudget } from '../src/policy/step/step-policy.js';
import { StaleStepError } from '../src/shared/errors.js';
import { decision, facts, NOW, record, run } from './step/support.js';

/**
 * The step policy as pure functions: every case here runs without Redis, a model or a clock.
 * The triage (`gate`) and the conclusion (`afterTools`) are the phases' own: test/step/.
 */

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
