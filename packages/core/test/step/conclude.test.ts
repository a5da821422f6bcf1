import type { Approval } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { guardFromHistory } from '../../src/policy/step/loop-guard.js';
import { afterTools, EVENT_OBSERVATION_CHARS } from '../../src/policy/step/step-policy.js';
import { facts, record, run } from './support.js';

/**
 * Conclude (pure, `afterTools` in policy/step/step-policy.ts): the step's calls are recorded;
 * one Transition says what happens next — park for approvals, wait for sub-agents, stop a
 * failing tool, or go on (handed off, with the plan's steps carried out marked done).
 */

describe('conclude', () => {
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

  it('waits for the sub-agent runs the step started, after any approval, charging the step once', () => {
    const child = record({ id: 'c2', name: 'call_refunds', outcome: 'awaiting_child', childRunId: 'child-1' });
    const t = afterTools(facts(), [child], []);
    expect(t).toMatchObject({ kind: 'wait', children: ['child-1'], charge: { promptTokens: 100 } });
    expect(t.change.to).toMatchObject({ status: 'waiting', pendingChildren: ['child-1'], step: 2 });
    expect(t.change.messages).toBeUndefined();
    const approval = { id: 'r1.2.0', runId: 'r1', step: 2, toolName: 'refund', summary: 's', risk: 'high' } as Approval;
    const both = afterTools(facts(), [record({ outcome: 'awaiting_approval', approvalId: 'r1.2.0' }), child], [approval]);
    expect(both.kind).toBe('park');
  });

  it('hands the run to the agent a transfer named, under the tighter of both limits', () => {
    const transfer = record({ name: 'transfer_to_refunds', observation: 'Transferred to the "refunds" agent.' });
    const t = afterTools(facts({ limitsOf: () => ({ maxSteps: 4, maxTokens: 50_000, timeoutMs: 60_000 }) }), [transfer], []);
    expect(t).toMatchObject({ kind: 'continue', log: { msg: 'run handed off', fields: { from: 'order-assistant', to: 'refunds' } } });
    expect(t.change.to).toMatchObject({ agent: 'refunds', limits: { maxSteps: 4, maxTokens: 10_000, timeoutMs: 60_000 } });
  });
});

describe('conclude: plans', () => {
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
});
