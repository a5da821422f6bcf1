import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

/** Plan, then execute: the order planner through the stock fleet and the scripted model. */

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

interface TraceCall {
  name: string;
  arguments: Record<string, unknown>;
  outcome: string;
  observation: string;
  planStep?: number;
  approvalId?: string;
}
interface Trace {
  status: string;
  finalAnswer: string | null;
  plan?: {
    status: string;
    approvalId?: string;
    decidedBy?: string;
    steps: Array<{ step: number; action: string; args: Record<string, unknown> }>;
    done: number[];
  };
  steps: Array<{ index: number; toolCalls: TraceCall[] }>;
}
interface ApprovalView {
  id: string;
  kind?: string;
  toolName: string;
  arguments: unknown;
}

const fleet = fleetPerFile({ workers: 1 });

async function submit(input: string): Promise<string> {
  const submitted = await fleet().callApi('POST', '/v1/runs', KEYS.user.key, { input, agent: 'order-planner' });
  expect(submitted.status).toBe(202);
  return submitted.body.id as string;
}

/** The run's one pending approval, once it parks (on another approval than `after`). */
async function parked(id: string, after?: string): Promise<ApprovalView> {
  const waiting = (r: { status: string; [k: string]: unknown }) =>
    r.status === 'pending_approval' && (r.pendingApprovals as ApprovalView[]).some((a) => a.id !== after);
  const run = await fleet().waitForRun(id, (r) => waiting(r) || ['succeeded', 'failed'].includes(r.status));
  expect(run.status).toBe('pending_approval');
  const pending = run.pendingApprovals as ApprovalView[];
  expect(pending).toHaveLength(1);
  return pending[0] as ApprovalView;
}

const done = (id: string) => fleet().waitForRun(id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status));
const trace = async (id: string) => (await fleet().callApi('GET', `/v1/runs/${id}/trace`)).body as Trace;
const approvalsOf = async (id: string) =>
  (
    (await fleet().callApprover('GET', '/v1/approvals', KEYS.approver.key)).body.approvals as Array<ApprovalView & { runId: string }>
  ).filter((a) => a.runId === id);

describe('plan mode', () => {
  it('asks for the whole plan once, then carries it out with no further approval', async () => {
    const id = await submit(LATE_ORDER);
    const approval = await parked(id);
    expect(approval).toMatchObject({ kind: 'plan', toolName: 'plan' });
    const steps = (approval.arguments as { steps: Array<{ action: string }> }).steps.map((s) => s.action);
    expect(steps).toEqual(['query_order', 'search_policy', 'create_ticket']);

    const decided = await fleet().callApprover('POST', `/v1/approvals/${approval.id}/approve`, KEYS.approver.key, { comment: 'plan ok' });
    expect(decided.status).toBe(200);
    expect((await done(id)).status).toBe('succeeded');

    const t = await trace(id);
    expect(t.plan).toMatchObject({ status: 'approved', approvalId: approval.id, decidedBy: KEYS.approver.userId, done: [1, 2, 3] });
    const calls = t.steps.flatMap((s) => s.toolCalls);
    expect(calls.map((c) => [c.name, c.planStep, c.outcome])).toEqual([
      ['query_order', 1, 'ok'],
      ['search_policy', 2, 'ok'],
      ['create_ticket', 3, 'ok'],
    ]);
    expect(t.finalAnswer).toMatch(/T[0-9A-F]{10}/);
    expect(await approvalsOf(id)).toHaveLength(1); // the plan's, and nothing else
  }, 60_000);

  it('runs an edited plan step with the edited arguments', async () => {
    const id = await submit('Customer complains order 2024001 has not shipped, please handle it');
    const approval = await parked(id);
    const ticket = (approval.arguments as { steps: Array<{ step: number; action: string; args: Record<string, unknown> }> }).steps.find(
      (s) => s.action === 'create_ticket',
    );
    const edited = { ...ticket?.args, suggestedAction: 'Refund the shipping fee and chase the warehouse today' };

    // Decision rights apply to the plan as to any approval: an edit needs a second person (four eyes).
    const own = await fleet().callApprover('POST', `/v1/approvals/${approval.id}/approve`, KEYS.user.key, {
      arguments: { [String(ticket?.step)]: edited },
    });
    expect(own.status).toBe(403);
    const decided = await fleet().callApprover('POST', `/v1/approvals/${approval.id}/approve`, KEYS.approver.key, {
      arguments: { [String(ticket?.step)]: edited },
    });
    expect(decided.status).toBe(200);
    expect(decided.body.editedBy).toBe(KEYS.approver.userId);
    expect((await done(id)).status).toBe('succeeded');

    const created = (await trace(id)).steps.flatMap((s) => s.toolCalls).find((c) => c.name === 'create_ticket');
    expect(created).toMatchObject({ outcome: 'ok', planStep: ticket?.step, arguments: { suggestedAction: edited.suggestedAction } });
    expect(await approvalsOf(id)).toHaveLength(1);
  }, 60_000);

  it('asks again for a write that leaves the approved plan', async () => {
    const id = await submit('客户张三投诉订单 2024001 一直没发货，帮他处理一下，并在订单上备注工单号');
    const plan = await parked(id);
    expect((plan.arguments as { steps: Array<{ action: string }> }).steps.map((s) => s.action)).not.toContain('update_order_note');
    await fleet().callApprover('POST', `/v1/approvals/${plan.id}/approve`, KEYS.approver.key, {});

    // The note names the ticket, which did not exist when the plan was made: it gets its own approval.
    const own = await parked(id, plan.id);
    expect(own).toMatchObject({ toolName: 'update_order_note' });
    expect(own.kind).not.toBe('plan');
    await fleet().callApprover('POST', `/v1/approvals/${own.id}/approve`, KEYS.approver.key, {});
    expect((await done(id)).status).toBe('succeeded');
    const calls = (await trace(id)).steps.flatMap((s) => s.toolCalls);
    expect(calls.find((c) => c.name === 'update_order_note')).toMatchObject({ outcome: 'ok', approvalId: own.id });
    expect(calls.find((c) => c.name === 'update_order_note')?.planStep).toBeUndefined();
  }, 60_000);

  it('tells the model when the plan is rejected, and carries out nothing', async () => {
    const id = await submit(LATE_ORDER);
    const plan = await parked(id);
    await fleet().callApprover('POST', `/v1/approvals/${plan.id}/reject`, KEYS.approver.key, { reason: 'not this week' });
    const run = await done(id);
    expect(run.status).toBe('succeeded');
    const t = await trace(id);
    expect(t.plan).toMatchObject({ status: 'rejected', decidedBy: KEYS.approver.userId });
    expect(t.steps.flatMap((s) => s.toolCalls)).toEqual([]);
    expect(t.finalAnswer).toMatch(/计划未获批准/);
  }, 60_000);
});
