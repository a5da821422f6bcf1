import type { RunRecord } from '@rein/contract';
import { type Approval, budgetRaiseSchema } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { budgetVerdict, proposeRaise, raisedLimits } from '../src/policy/budget/budget-ask.js';

/** The budget-ask policy as pure functions: no Redis, no model, no clock. */

const NOW = Date.parse('2026-01-01T00:00:10.000Z');

const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  id: '00000000-0000-4000-8000-000000000001',
  traceId: '0'.repeat(32),
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user'],
  agent: 'order-assistant',
  input: 'hello',
  metadata: {},
  limits: { maxSteps: 8, maxTokens: 1000, maxCostUsd: 0.5, timeoutMs: 60_000 },
  status: 'running',
  step: 4,
  usage: { promptTokens: 1000, completionTokens: 200, totalTokens: 1200 },
  costUsd: 0.6,
  pendingApprovals: [],
  version: 5,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  deadlineAt: '2026-01-01T00:01:00.000Z',
  ...over,
});

const asked = (r: RunRecord) => {
  const v = budgetVerdict(r, [], 'token_budget', true, NOW, 60_000);
  if (v.kind !== 'ask') throw new Error(`expected an ask, got ${v.kind}`);
  return v.approval;
};

describe('proposeRaise', () => {
  it('never proposes more than a budget raise may hold, so the proposal can be granted as it is', () => {
    const big = run({ step: 0, limits: { maxSteps: 8, maxTokens: 10_000_000, maxCostUsd: 900_000, timeoutMs: 60_000 } });
    expect(budgetRaiseSchema.safeParse(proposeRaise(big)).success).toBe(true);
  });

  it('proposes the overshoot plus three more steps at the run’s pace, tokens and cost', () => {
    // 1,200 tokens and $0.60 over 4 steps: 300 and $0.15 a step.
    expect(proposeRaise(run())).toEqual({ extraTokens: 200 + 900, extraCostUsd: 0.55 });
  });

  it('pays for at most the steps the run has left, and no cost for a run without a cost limit', () => {
    expect(proposeRaise(run({ limits: { maxSteps: 5, maxTokens: 1000, timeoutMs: 60_000 } }))).toEqual({
      extraTokens: 200 + 300,
      extraCostUsd: 0,
    });
  });
});

describe('budgetVerdict', () => {
  it('goes on when nothing is exhausted, fails when the agent does not ask', () => {
    expect(budgetVerdict(run(), [], null, true, NOW, 60_000)).toEqual({ kind: 'go' });
    expect(budgetVerdict(run(), [], 'cost_budget', false, NOW, 60_000)).toEqual({ kind: 'fail', reason: 'cost_budget' });
  });

  it('never asks for the deadline, the step limit or the tenant’s daily quota, nor for a sub-agent run', () => {
    for (const reason of ['deadline', 'max_steps', 'tenant_quota'] as const)
      expect(budgetVerdict(run(), [], reason, true, NOW, 60_000)).toEqual({ kind: 'fail', reason });
    expect(budgetVerdict(run({ ancestors: ['p'] }), [], 'token_budget', true, NOW, 60_000)).toEqual({
      kind: 'fail',
      reason: 'token_budget',
    });
  });

  it('asks with a budget approval for an approver, bound to the proposal', () => {
    const a = asked(run());
    expect(a).toMatchObject({
      kind: 'budget',
      toolName: 'budget',
      requiredRole: 'approver',
      status: 'pending',
      step: 4,
      arguments: { extraTokens: 1100, extraCostUsd: 0.55 },
      expiresAt: new Date(NOW + 60_000).toISOString(),
    });
    // Its id is past any tool call's index of the step.
    expect(a.id).toBe(`${run().id}.4.1000000`);
  });

  it('raises once while parked on a granted approval (edited amounts first), fails on a refused one', () => {
    const parked = run({ status: 'pending_approval' });
    const a = asked(parked);
    const granted: Approval = { ...a, status: 'approved', approvedArguments: { extraTokens: 5, extraCostUsd: 0.1 } };
    expect(budgetVerdict(parked, [granted], 'token_budget', true, NOW, 1)).toEqual({
      kind: 'raise',
      raise: { extraTokens: 5, extraCostUsd: 0.1 },
    });
    // Raised (the run runs again): no second raise, and no second ask of the same step.
    expect(budgetVerdict(run(), [granted], null, true, NOW, 1)).toEqual({ kind: 'go' });
    expect(budgetVerdict(run(), [granted], 'token_budget', true, NOW, 1)).toEqual({ kind: 'fail', reason: 'token_budget' });
    for (const status of ['rejected', 'expired'] as const)
      expect(budgetVerdict(parked, [{ ...a, status }], 'cost_budget', true, NOW, 1)).toEqual({ kind: 'fail', reason: 'cost_budget' });
  });
});

describe('raisedLimits', () => {
  it('grows tokens and cost; a run without a cost limit gets none', () => {
    const limits = { maxSteps: 8, maxTokens: 1000, maxCostUsd: 0.5, timeoutMs: 1 };
    expect(raisedLimits(limits, { extraTokens: 10, extraCostUsd: 0.25 })).toEqual({ ...limits, maxTokens: 1010, maxCostUsd: 0.75 });
    expect(raisedLimits({ maxSteps: 8, maxTokens: 1000, timeoutMs: 1 }, { extraTokens: 10, extraCostUsd: 1 })).toEqual({
      maxSteps: 8,
      maxTokens: 1010,
      timeoutMs: 1,
    });
  });
});
