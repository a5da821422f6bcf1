import type { Approval, ModelToolCall, RunPlan, RunRecord } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hashArguments } from '../src/policy/app/argument-hash.js';
import { type CallPlanInput, type PlannedCall, planCalls, plannedRecord } from '../src/policy/step/call-plan.js';

/** The call plan as a pure function (no Redis): what the step does with each of the model's calls. */

const lookup = defineTool({
  name: 'lookup',
  description: 'read an order',
  kind: 'read',
  parameters: z.object({ orderNo: z.string().min(1) }),
  execute: () => ({}),
});
const refund = defineTool({
  name: 'refund',
  description: 'refund (write, approved by a person)',
  kind: 'write',
  parameters: z.object({ orderNo: z.string(), amount: z.number().positive() }),
  approval: (a) => ({ risk: 'high', summary: `refund ${a.amount}` }),
  execute: () => ({}),
});
const wipe = defineTool({
  name: 'wipe',
  description: 'admins only',
  kind: 'write',
  allowedRoles: ['admin'],
  parameters: z.object({}),
  execute: () => ({}),
});
const broken = defineTool({
  name: 'broken',
  description: 'its approval policy throws',
  kind: 'write',
  parameters: z.object({}),
  approval: () => {
    throw new Error('no rule for this');
  },
  execute: () => ({}),
});
const secret = defineTool({ name: 'secret', description: 'not the agent’s', kind: 'read', parameters: z.object({}), execute: () => ({}) });

const tools = new Map<string, Tool>([lookup, refund, wipe, broken, secret].map((t) => [t.name, t]));
const profile = { tools: ['lookup', 'refund', 'wipe', 'broken'] } as unknown as AgentProfile;
const NOW = Date.parse('2026-01-01T00:00:00Z');
const run = {
  id: '00000000-0000-4000-8000-000000000001',
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user'],
  step: 3,
  deadlineAt: new Date(NOW + 60_000).toISOString(),
} as RunRecord;

const call = (name: string, args: unknown, id = `c-${name}`): ModelToolCall => ({
  id,
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});
const plan = (calls: ModelToolCall[], over: Partial<CallPlanInput> = {}): PlannedCall[] =>
  planCalls({ run, profile, tools, calls, approvals: [], now: NOW, approvalTtlMs: 60_000, ...over });
const one = (c: ModelToolCall, over: Partial<CallPlanInput> = {}) => plan([c], over)[0]!;

describe('planCalls', () => {
  it('runs a call that needs no approval, with its parsed arguments and the trusted context', () => {
    const p = one(call('lookup', { orderNo: 'A1' }));
    expect(p).toMatchObject({ kind: 'run', cover: 'none', tool: lookup, args: { orderNo: 'A1' }, extra: {}, warnings: [] });
    expect(p.kind === 'run' && p.ctx).toEqual({
      tenantId: 'acme',
      userId: 'alice',
      roles: ['user'],
      runId: run.id,
      step: 3,
      toolCallId: 'c-lookup',
      idempotencyKey: `${run.id}:3:c-lookup`,
      deadlineMs: NOW + 60_000,
    });
  });

  it('refuses an unknown tool, and one the agent was not given, naming the agent’s tools', () => {
    for (const name of ['nope', 'secret']) {
      const p = one(call(name, {}));
      expect(p).toMatchObject({ kind: 'refuse', outcome: 'unknown_tool', args: '{}' });
      expect(p.kind === 'refuse' && p.observation).toBe(
        `Tool "${name}" is not available to this agent. Available tools: lookup, refund, wipe, broken.`,
      );
    }
  });

  it('refuses a caller without one of the tool’s roles, with a warning', () => {
    const p = one(call('wipe', {}));
    expect(p).toMatchObject({ kind: 'refuse', outcome: 'forbidden', args: {} });
    expect(p.kind === 'refuse' && p.observation).toMatch(/not permitted to use wipe .*needs one of: admin/);
    expect(p.warnings).toEqual([{ msg: "tool call forbidden for the caller's roles", fields: { tool: 'wipe' } }]);
    expect(one(call('wipe', {}), { run: { ...run, roles: ['admin'] } })).toMatchObject({ kind: 'run', cover: 'none' });
  });

  it('refuses arguments that are not JSON, or not of the tool’s schema, keeping what the model sent', () => {
    const bad = one(call('lookup', '{"orderNo": '));
    expect(bad).toMatchObject({ kind: 'refuse', outcome: 'invalid_arguments', args: '{"orderNo": ' });
    expect(bad.kind === 'refuse' && bad.observation).toMatch(/^arguments are not valid JSON/);
    const wrong = one(call('lookup', { orderNo: '' }));
    expect(wrong.kind === 'refuse' && wrong.outcome).toBe('invalid_arguments');
    expect(wrong.kind === 'refuse' && wrong.observation).toMatch(/do not match the schema of lookup/);
  });

  it('fails closed when the approval policy throws', () => {
    const p = one(call('broken', {}));
    expect(p).toMatchObject({ kind: 'refuse', outcome: 'error' });
    expect(JSON.parse(p.kind === 'refuse' ? p.observation : '')).toMatchObject({ error: 'approval_policy_failed', retryable: false });
    expect(p.warnings[0]?.msg).toBe('approval policy failed');
  });

  it('asks for an approval bound to the call when none exists yet', () => {
    const p = plan([call('lookup', { orderNo: 'A1' }), call('refund', { orderNo: 'A1', amount: 20 })])[1]!;
    const id = `${run.id}.3.1`;
    expect(p).toMatchObject({ kind: 'await_approval', observation: `Waiting for human approval (${id}).`, extra: { approvalId: id } });
    expect(p.approvalDecision).toBe('pending');
    expect(p.kind === 'await_approval' && p.newApproval).toMatchObject({
      id,
      runId: run.id,
      step: 3,
      toolCallId: 'c-refund',
      tenantId: 'acme',
      requestedBy: 'alice',
      toolName: 'refund',
      arguments: { orderNo: 'A1', amount: 20 },
      policyVersion: 1,
      risk: 'high',
      requiredRole: 'approver',
      status: 'pending',
      createdAt: new Date(NOW).toISOString(),
      expiresAt: new Date(NOW + 60_000).toISOString(),
    });
    expect(plannedRecord(p as Extract<PlannedCall, { kind: 'await_approval' }>)).toMatchObject({
      outcome: 'awaiting_approval',
      approvalId: id,
    });
  });

  describe('with the call’s own approval', () => {
    const c = call('refund', { orderNo: 'A1', amount: 20 });
    const asked = (one(c) as Extract<PlannedCall, { kind: 'await_approval' }>).newApproval!;
    const decided = (over: Partial<Approval>) => one(c, { approvals: [{ ...asked, ...over }] });

    it('waits while it is pending, without asking again', () => {
      const p = decided({});
      expect(p).toMatchObject({ kind: 'await_approval', approvalDecision: 'pending' });
      expect(p.kind === 'await_approval' && p.newApproval).toBeUndefined();
    });

    it('runs an approved call under the same policy version, on the approved arguments', () => {
      expect(decided({ status: 'approved', decidedBy: 'bob' })).toMatchObject({
        kind: 'run',
        cover: 'approval',
        args: { orderNo: 'A1', amount: 20 },
        extra: { approvalId: asked.id },
        approvalDecision: 'approved',
      });
      const approvedArguments = { orderNo: 'A1', amount: 15 };
      const edited = decided({
        status: 'approved',
        decidedBy: 'bob',
        editedBy: 'bob',
        approvedArguments,
        argsHash: hashArguments(approvedArguments),
      });
      expect(edited).toMatchObject({ kind: 'run', args: { orderNo: 'A1', amount: 15 } });
      expect(edited.kind === 'run' && edited.resultPrefix).toBe(
        'Approved by bob with edited arguments {"orderNo":"A1","amount":15} (you proposed {"orderNo":"A1","amount":20}). Result: ',
      );
    });

    it('refuses an approval judged by another policy version', () => {
      const p = decided({ status: 'approved', decidedBy: 'bob', policyVersion: 0 });
      expect(p).toMatchObject({ kind: 'refuse', outcome: 'rejected', extra: { approvalId: asked.id } });
      expect(p.kind === 'refuse' && p.observation).toMatch(/approval policy of refund changed/);
      expect(p.warnings[0]?.msg).toBe('approval binding refused');
    });

    it('tells the model a rejection, an expiry and a withdrawal', () => {
      expect(decided({ status: 'rejected', decidedBy: 'bob', comment: 'too much' })).toMatchObject({
        kind: 'refuse',
        outcome: 'rejected',
        observation: 'Not executed: rejected by bob: too much',
      });
      expect(decided({ status: 'expired' })).toMatchObject({ outcome: 'rejected', observation: expect.stringMatching(/expired at/) });
      expect(decided({ status: 'withdrawn' })).toMatchObject({ observation: 'Not executed: the approval was withdrawn.' });
    });
  });

  describe('with an approved plan', () => {
    const steps = [
      { step: 1, action: 'lookup', args: { orderNo: 'A1' }, desc: 'look', risk: 'low' as const },
      { step: 2, action: 'refund', args: { orderNo: 'A1', amount: 20 }, desc: 'refund', risk: 'high' as const },
    ];
    const approved: RunPlan = {
      steps,
      status: 'approved',
      approvalId: `${run.id}.0.0`,
      done: [1],
      granted: { risk: 'high', requiredRole: 'approver' },
      policyVersions: { '1': 1, '2': 1 },
    };
    const onPlan = { run: { ...run, plan: approved } };

    it('runs a call carrying out a step on the plan’s approval, linked to its step', () => {
      const p = one(call('refund', { amount: 20, orderNo: 'A1' }), onPlan);
      expect(p).toMatchObject({ kind: 'run', cover: 'plan', extra: { planStep: 2, approvalId: approved.approvalId }, warnings: [] });
      expect(p.approvalDecision).toBeUndefined();
    });

    it('links a step once; a second identical call leaves the plan and asks on its own', () => {
      const [a, b] = plan([call('refund', { orderNo: 'A1', amount: 20 }, 'x'), call('refund', { orderNo: 'A1', amount: 20 }, 'y')], onPlan);
      expect(a).toMatchObject({ kind: 'run', cover: 'plan', extra: { planStep: 2 } });
      expect(b).toMatchObject({ kind: 'await_approval', extra: { approvalId: `${run.id}.3.1` } });
    });

    it('asks on its own when the tool’s policy changed since the plan was approved', () => {
      const p = one(call('refund', { orderNo: 'A1', amount: 20 }), {
        run: { ...run, plan: { ...approved, policyVersions: { '2': 0 } } },
      });
      expect(p).toMatchObject({ kind: 'await_approval', extra: { approvalId: `${run.id}.3.0` } });
      expect(p.warnings[0]).toMatchObject({ msg: 'plan approval binding refused', fields: { planStep: 2 } });
    });

    it('links a call needing no approval to its step, running it on no approval', () => {
      const p = one(call('lookup', { orderNo: 'A1' }), { run: { ...run, plan: { ...approved, done: [] } } });
      expect(p).toMatchObject({ kind: 'run', cover: 'none', extra: { planStep: 1 } });
    });
  });
});
