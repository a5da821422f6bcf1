import type { Approval, ModelToolCall, RunRecord } from '@rein/contract';
import { type AgentProfile, callArgumentsSchema, defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { memoHandle, memoOf } from '../src/policy/a2a/remote-task.js';
import { hashArguments } from '../src/policy/app/argument-hash.js';
import { type PlannedCall, planCalls } from '../src/policy/step/call-plan.js';
import { inputApprovalId, MAX_INPUT_ROUNDS, questionApproval } from '../src/policy/step/input-approvals.js';

/** A call's questions for a person (pure): the approval each becomes, and how the plan runs the call again with the reply. */

const ask = defineTool({
  name: 'call_remote',
  description: 'a remote agent',
  kind: 'write',
  parameters: callArgumentsSchema,
  execute: () => '',
});
const tools = new Map<string, Tool>([[ask.name, ask]]);
const profile = { tools: ['call_remote'] } as unknown as AgentProfile;
const NOW = Date.parse('2026-01-01T00:00:00Z');
const run = {
  id: '00000000-0000-4000-8000-000000000001',
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user'],
  step: 3,
  deadlineAt: new Date(NOW + 60_000).toISOString(),
} as RunRecord;
const call: ModelToolCall = { id: 'c1', name: 'call_remote', arguments: JSON.stringify({ input: 'where is my order?' }) };
const requirement = { risk: 'high' as const, requiredRole: 'approver' as const, summary: 'The remote agent remote asks: Which order?' };

const asked = (round: number, over: Partial<Approval> = {}): Approval => ({
  ...questionApproval({
    run,
    index: 0,
    toolCallId: call.id,
    tool: ask,
    asked: { round, requirement, proposed: { input: '' } },
    now: NOW,
    approvalTtlMs: 60_000,
  }),
  ...over,
});
const answered = (round: number, input: string): Approval =>
  asked(round, { status: 'approved', decidedBy: 'bob', approvedArguments: { input }, editedBy: 'bob', argsHash: hashArguments({ input }) });
const planned = (approvals: Approval[]): PlannedCall =>
  planCalls({ run, profile, tools, calls: [call], approvals, now: NOW, approvalTtlMs: 60_000 })[0] as PlannedCall;

describe('questionApproval', () => {
  it('is an input approval of the same call, the question its summary, the answer its arguments, an id per round', () => {
    expect(asked(1)).toMatchObject({
      kind: 'input',
      runId: run.id,
      step: 3,
      toolCallId: 'c1',
      toolName: 'call_remote',
      requestedBy: 'alice',
      summary: requirement.summary,
      arguments: { input: '' },
      argsHash: hashArguments({ input: '' }),
      requiredRole: 'approver',
      status: 'pending',
      expiresAt: new Date(NOW + 60_000).toISOString(),
    });
    const ids = new Set([1, 2, MAX_INPUT_ROUNDS].flatMap((round) => [0, 1].map((index) => inputApprovalId(run.id, 3, index, round))));
    expect(ids.size).toBe(6);
    // Never the id of a call's own approval (`<run>.<step>.<index>`) nor the budget's.
    expect(asked(1).id).not.toMatch(/\.3\.(0|1|1000000)$/);
    expect(() => asked(MAX_INPUT_ROUNDS + 1)).toThrow(/asks 1 to/);
  });
});

describe('planCalls with a question asked', () => {
  it('runs a call that asked nothing as before', () => {
    expect(planned([])).toMatchObject({ kind: 'run', extra: {} });
    expect((planned([]) as { reply?: unknown }).reply).toBeUndefined();
  });

  it('waits while the question is undecided', () => {
    const q = asked(1);
    expect(planned([q])).toMatchObject({
      kind: 'await_approval',
      extra: { approvalId: q.id },
      approvalDecision: 'pending',
      observation: `Waiting for a person to answer call_remote's question (${q.id}).`,
    });
  });

  it('runs the call again with the answer of its last question', () => {
    const p = planned([answered(1, 'order 7'), answered(2, 'order 42')]);
    expect(p).toMatchObject({
      kind: 'run',
      args: { input: 'where is my order?' },
      extra: { approvalId: asked(2).id },
      reply: { round: 2, approvalId: asked(2).id, answered: true, args: { input: 'order 42' } },
    });
  });

  it('runs it with no answer, and why, when the question was rejected, expired, or its answer does not bind', () => {
    const reply = (a: Approval) => (planned([a]) as Extract<PlannedCall, { kind: 'run' }>).reply;
    expect(reply(asked(1, { status: 'rejected', decidedBy: 'bob', comment: 'no such order' }))).toEqual({
      round: 1,
      approvalId: asked(1).id,
      answered: false,
      why: 'bob declined to answer: no such order',
    });
    expect(reply(asked(1, { status: 'expired' }))).toMatchObject({ answered: false, why: /nobody answered before/ });
    // Approved as proposed, the empty answer is none the tool takes.
    expect(reply(asked(1, { status: 'approved', decidedBy: 'bob' }))).toMatchObject({ answered: false, why: /arguments differ/ });
    // Another call's question is not this one's.
    expect(reply(asked(1, { status: 'approved', toolCallId: 'c2' }))).toMatchObject({ answered: false, why: /different call/ });
  });
});

describe('a remote call’s memo in the ledger', () => {
  it('is the bare task id until an answer is sent, and reads back what it wrote', () => {
    expect(memoHandle({ task: 't-1' })).toBe('t-1');
    expect(memoOf('t-1')).toEqual({ task: 't-1' });
    const sending = { task: 't-1', sending: `${run.id}.3.2000000` };
    expect(memoOf(memoHandle(sending))).toEqual(sending);
    expect(memoOf('{not json')).toEqual({ task: '{not json' });
  });
});
