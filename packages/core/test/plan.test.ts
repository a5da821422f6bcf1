import type { Approval, PlanStep, RunPlan, RunRecord } from '@rein/contract';
import { defineAgent, defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  editPlan,
  linkCallsToPlan,
  planCoverProblem,
  planHash,
  planOptionsSchema,
  planOutcome,
  planRequirement,
  planResponseFormat,
  validatePlan,
} from '../src/policy/step/plan.js';

/** Plan mode's policy as pure functions (no Redis): validation, approval, edits, drift detection. */

const lookup = defineTool({
  name: 'lookup',
  description: 'read an order',
  kind: 'read',
  parameters: z.object({ orderNo: z.string().min(1) }),
  execute: () => ({}),
});
const refund = defineTool({
  name: 'refund',
  description: 'refund (write)',
  kind: 'write',
  parameters: z.object({ orderNo: z.string(), amount: z.number().positive() }),
  approval: (a) =>
    a.amount > 500
      ? { risk: 'critical', requiredRole: 'supervisor', summary: `refund ${a.amount}` }
      : { risk: 'high', summary: `refund ${a.amount}` },
  execute: () => ({}),
});
const note = defineTool({
  name: 'note',
  description: 'note (write, no approval)',
  kind: 'write',
  parameters: z.object({ text: z.string() }),
  execute: () => ({}),
});
const tools = new Map<string, Tool>([lookup, refund, note].map((t) => [t.name, t]));
const options = planOptionsSchema.parse({});
const ctx = { tenantId: 't', userId: 'u', roles: ['user' as const], runId: 'r', step: 0, toolCallId: 'plan', idempotencyKey: 'k' };

const step = (n: number, action: string, args: Record<string, unknown>, risk: 'low' | 'high' = 'low'): PlanStep => ({
  step: n,
  action,
  args,
  desc: `step ${n}`,
  risk,
});
const planText = (...steps: PlanStep[]) => JSON.stringify({ steps });

describe('validatePlan', () => {
  it('accepts a plan of the agent’s tools with valid arguments', () => {
    const check = validatePlan(
      planText(step(1, 'lookup', { orderNo: 'A1' }), step(2, 'refund', { orderNo: 'A1', amount: 10 })),
      tools,
      options,
    );
    expect(check).toEqual({ ok: true, steps: [step(1, 'lookup', { orderNo: 'A1' }), step(2, 'refund', { orderNo: 'A1', amount: 10 })] });
  });

  it.each([
    ['not JSON', 'sure, here is my plan', /not JSON/],
    [
      'an invented tool',
      planText(step(1, 'lookup', { orderNo: 'A1' }), step(2, 'delete_everything', {})),
      /"delete_everything" is not one of your tools/,
    ],
    [
      'arguments its tool refuses',
      planText(step(1, 'lookup', { orderNo: 'A1' }), step(2, 'refund', { orderNo: 'A1', amount: -5 })),
      /step 2: arguments do not match refund/,
    ],
    ['too few steps', planText(step(1, 'lookup', { orderNo: 'A1' })), /2 to 6 steps, this one has 1/],
    ['too many steps', planText(...Array.from({ length: 7 }, (_, i) => step(i + 1, 'lookup', { orderNo: 'A1' }))), /this one has 7/],
    ['steps out of order', planText(step(2, 'lookup', { orderNo: 'A1' }), step(1, 'lookup', { orderNo: 'B2' })), /numbered 1..n/],
    ['an unknown risk', JSON.stringify({ steps: [{ ...step(1, 'lookup', {}), risk: 'medium' }] }), /risk/],
  ])('refuses %s', (_what, content, problem) => {
    const check = validatePlan(content, tools, options);
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.problems.join('; ')).toMatch(problem);
  });

  it('asks the model for the agent’s tools only, within the bounds', () => {
    const format = planResponseFormat(['lookup', 'refund'], planOptionsSchema.parse({ minSteps: 3, maxSteps: 4 }));
    expect(format.schema.properties.steps).toMatchObject({
      minItems: 3,
      maxItems: 4,
      items: { properties: { action: { enum: ['lookup', 'refund'] } } },
    });
  });
});

describe('planRequirement', () => {
  it('needs no approval for low-risk reads, one for a write, as strict as the strictest step', () => {
    expect(planRequirement([step(1, 'lookup', { orderNo: 'A1' }), step(2, 'lookup', { orderNo: 'B2' })], tools, ctx)).toBeNull();
    expect(planRequirement([step(1, 'lookup', { orderNo: 'A1' }), step(2, 'note', { text: 'x' })], tools, ctx)).toMatchObject({
      risk: 'high',
      requiredRole: 'approver',
    });
    expect(planRequirement([step(1, 'lookup', { orderNo: 'A1' }, 'high'), step(2, 'lookup', { orderNo: 'B' })], tools, ctx)).toMatchObject({
      risk: 'high',
    });
    expect(
      planRequirement([step(1, 'refund', { orderNo: 'A1', amount: 10 }), step(2, 'refund', { orderNo: 'A1', amount: 900 })], tools, ctx),
    ).toMatchObject({ risk: 'critical', requiredRole: 'supervisor', summary: expect.stringMatching(/^Plan of 2 steps: 1\. refund/) });
  });
});

describe('editPlan', () => {
  const steps = [step(1, 'lookup', { orderNo: 'A1' }), step(2, 'refund', { orderNo: 'A1', amount: 10 })];
  const current = { risk: 'high' as const, requiredRole: 'approver' as const, summary: 'plan' };

  it('re-polices an edited step and never gets less strict', () => {
    const bigger = editPlan(steps, { 2: { orderNo: 'A1', amount: 900 } }, current, tools, ctx);
    expect(bigger.steps[1]?.args).toEqual({ orderNo: 'A1', amount: 900 });
    expect(bigger.requirement).toMatchObject({ risk: 'critical', requiredRole: 'supervisor', summary: 'plan' });
    const critical = { ...current, risk: 'critical' as const, requiredRole: 'supervisor' as const };
    expect(editPlan(steps, { 2: { orderNo: 'A1', amount: 1 } }, critical, tools, ctx).requirement).toMatchObject({ risk: 'critical' });
  });

  it('refuses edits its tool’s schema refuses, and steps the plan lacks', () => {
    expect(() => editPlan(steps, { 2: { orderNo: 'A1', amount: 'lots' } }, current, tools, ctx)).toThrow(/step 2: edited arguments/);
    expect(() => editPlan(steps, { 9: {} }, current, tools, ctx)).toThrow(/no step 9/);
  });
});

describe('linkCallsToPlan (drift detection)', () => {
  const plan: RunPlan = {
    steps: [
      step(1, 'lookup', { orderNo: 'A1' }),
      step(2, 'refund', { orderNo: 'A1', amount: 10 }),
      step(3, 'refund', { orderNo: 'A1', amount: 10 }),
    ],
    status: 'approved',
    approvalId: 'r.0.0',
    done: [1],
  };
  const calls = (...c: Array<[string, unknown]>) => c.map(([name, args]) => ({ name, arguments: JSON.stringify(args) }));
  const toolOf = (name: string) => tools.get(name);

  it('links calls to not yet carried out steps by tool and canonical arguments, each step once', () => {
    expect(
      linkCallsToPlan(
        plan,
        calls(
          ['refund', { amount: 10, orderNo: 'A1' }],
          ['refund', { orderNo: 'A1', amount: 10 }],
          ['refund', { orderNo: 'A1', amount: 10 }],
        ),
        toolOf,
      ),
    ).toEqual([2, 3, undefined]);
  });

  it('leaves off-plan calls unlinked: another tool, other arguments, a step already done, an unapproved plan', () => {
    expect(
      linkCallsToPlan(
        plan,
        calls(['note', { text: 'x' }], ['refund', { orderNo: 'A1', amount: 11 }], ['lookup', { orderNo: 'A1' }]),
        toolOf,
      ),
    ).toEqual([undefined, undefined, undefined]);
    for (const status of ['pending_approval', 'rejected'] as const) {
      expect(linkCallsToPlan({ ...plan, status }, calls(['refund', { orderNo: 'A1', amount: 10 }]), toolOf)).toEqual([undefined]);
    }
    expect(linkCallsToPlan(undefined, calls(['lookup', { orderNo: 'A1' }]), toolOf)).toEqual([undefined]);
  });
});

describe('planOutcome', () => {
  const run = (over: Partial<RunRecord> = {}) =>
    ({ id: '00000000-0000-0000-0000-000000000001', tenantId: 't', userId: 'u', roles: ['user'], step: 0, ...over }) as RunRecord;
  const facts = { tools, options, approvals: [] as Approval[], now: 0, approvalTtlMs: 1000 };
  const good = planText(step(1, 'lookup', { orderNo: 'A1' }), step(2, 'refund', { orderNo: 'A1', amount: 10 }, 'high'));

  it('gives an invalid plan one repair turn, then fails the run', () => {
    expect(planOutcome({ ...facts, run: run(), content: 'no' }).kind).toBe('repair');
    expect(planOutcome({ ...facts, run: run({ step: 1 }), content: 'no' }).kind).toBe('invalid');
  });

  it('accepts a read-only plan, and parks a plan with a write on one plan approval bound to its steps', () => {
    const reads = planOutcome({
      ...facts,
      run: run(),
      content: planText(step(1, 'lookup', { orderNo: 'A1' }), step(2, 'lookup', { orderNo: 'B' })),
    });
    expect(reads).toMatchObject({ kind: 'proceed', plan: { status: 'accepted' } });
    const parked = planOutcome({ ...facts, run: run(), content: good });
    if (parked.kind !== 'park') throw new Error(parked.kind);
    expect(parked.approval).toMatchObject({
      kind: 'plan',
      toolName: 'plan',
      status: 'pending',
      risk: 'high',
      argsHash: planHash(parked.plan.steps),
    });
    expect(parked.plan).toMatchObject({ status: 'pending_approval', approvalId: parked.approval.id });
  });

  it('follows the approved (edited) steps, and refuses steps that do not match what was approved', () => {
    const parked = planOutcome({ ...facts, run: run(), content: good });
    if (parked.kind !== 'park') throw new Error(parked.kind);
    const editedSteps = [parked.plan.steps[0] as PlanStep, { ...(parked.plan.steps[1] as PlanStep), args: { orderNo: 'A1', amount: 5 } }];
    const approved: Approval = {
      ...parked.approval,
      status: 'approved',
      decidedBy: 'lisi',
      approvedArguments: { steps: editedSteps },
      editedBy: 'lisi',
      argsHash: planHash(editedSteps),
    };
    const resumed = planOutcome({ ...facts, run: run({ plan: parked.plan }), content: good, approvals: [approved] });
    expect(resumed).toMatchObject({ kind: 'proceed', plan: { status: 'approved', steps: editedSteps, decidedBy: 'lisi' } });
    const tampered = planOutcome({
      ...facts,
      run: run({ plan: parked.plan }),
      content: good,
      approvals: [{ ...approved, argsHash: planHash(parked.plan.steps) }],
    });
    expect(tampered).toMatchObject({ kind: 'proceed', plan: { status: 'rejected' } });
    const rejected = planOutcome({
      ...facts,
      run: run({ plan: parked.plan }),
      content: good,
      approvals: [{ ...parked.approval, status: 'rejected', decidedBy: 'lisi', comment: 'no' }],
    });
    expect(rejected).toMatchObject({ kind: 'proceed', plan: { status: 'rejected' }, note: expect.stringMatching(/rejected by lisi: no/) });
  });
});

describe("a plan and its steps' quorum", () => {
  const wire = defineTool({
    name: 'wire',
    description: 'wire money (two people must approve)',
    kind: 'write',
    parameters: z.object({ amount: z.number().positive() }),
    approval: (a) => ({ risk: 'high', summary: `wire ${a.amount}`, quorum: 2 }),
    execute: () => ({}),
  });
  const withWire = new Map<string, Tool>([...tools, [wire.name, wire]]);
  const run = { id: '00000000-0000-0000-0000-000000000002', tenantId: 't', userId: 'u', roles: ['user'], step: 0 } as RunRecord;
  const content = planText(step(1, 'lookup', { orderNo: 'A1' }), step(2, 'wire', { amount: 10 }, 'high'));

  it("asks the plan's approval of as many people as its strictest step, and grants no step more than they approved", () => {
    const parked = planOutcome({ tools: withWire, options, approvals: [], now: 0, approvalTtlMs: 1000, run, content });
    if (parked.kind !== 'park') throw new Error(parked.kind);
    expect(parked.approval).toMatchObject({ kind: 'plan', quorum: 2 });
    const approved: Approval = { ...parked.approval, status: 'approved', decidedBy: 'lisi' };
    const followed = planOutcome({
      tools: withWire,
      options,
      approvals: [approved],
      now: 0,
      approvalTtlMs: 1000,
      run: { ...run, plan: parked.plan },
      content,
    });
    if (followed.kind !== 'proceed') throw new Error(followed.kind);
    expect(followed.plan.granted).toMatchObject({ quorum: 2 });
    const requirement = { risk: 'high' as const, requiredRole: 'approver' as const, summary: 'wire 10', quorum: 2 };
    expect(planCoverProblem(followed.plan, 2, wire, requirement)).toBeNull();
    // A plan approved by one person (granted before quorums reached plans) covers no step that needs two.
    const single = { ...followed.plan, granted: { risk: 'high' as const, requiredRole: 'approver' as const } };
    expect(planCoverProblem(single, 2, wire, requirement)).toMatch(/quorum 2, more than the plan's approval granted/);
  });
});

describe('plan-mode agents', () => {
  it('get 2 to 6 steps by default and refuse plan options without plan mode', () => {
    expect(defineAgent({ name: 'p', instructions: 'x', tools: ['lookup'], mode: 'plan' }).plan).toEqual({ minSteps: 2, maxSteps: 6 });
    expect(defineAgent({ name: 'q', instructions: 'x', tools: ['lookup'] }).plan).toBeUndefined();
    expect(() => defineAgent({ name: 'r', instructions: 'x', tools: ['lookup'], plan: { maxSteps: 3 } })).toThrow(/need mode: 'plan'/);
  });
});
