import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Escalation } from '../src/schemas/approval.js';
import type { Principal } from '../src/schemas/identity.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { defineTool } from '../src/tools/tool.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();
const APPROVER_2: Principal = { tenantId: 'acme', userId: 'dave', roles: ['approver'] };
const SUPERVISOR: Principal = { tenantId: 'acme', userId: 'carol', roles: ['supervisor'] };
/** A requester who holds the approver role: a quorum never counts their vote. */
const REQUESTER: Principal = { tenantId: 'acme', userId: 'alice', roles: ['approver'] };

/** A wire transfer needing two approvers (and, optionally, escalating); counts its executions with their amounts. */
function transferTool(opts: { escalate?: Escalation } = {}) {
  const sent: number[] = [];
  const tool = defineTool({
    name: 'wire_transfer',
    description: 'send money',
    kind: 'write',
    parameters: z.object({ amount: z.number().positive() }),
    approval: (args) => ({
      risk: 'high',
      summary: `wire ${args.amount}`,
      quorum: 2,
      ...(opts.escalate ? { escalate: opts.escalate } : {}),
    }),
    async execute(args) {
      sent.push(args.amount);
      return { sent: args.amount };
    },
  });
  return { tool, sent };
}

const transferThenDone = (amount: number) =>
  createFakeModel([{ toolCalls: [toolCall('w1', 'wire_transfer', { amount })] }, { content: 'done' }]);

async function parked(t: ReturnType<typeof use>, principal: Principal = REQUESTER) {
  const id = await t.submit('wire it', principal);
  await t.drain();
  const [approval] = (await t.approvals.list(SUPERVISOR, { status: 'pending', limit: 100 })).approvals;
  if (!approval) throw new Error('the run did not park');
  return { id, approval };
}

describe('quorum', () => {
  it('stays pending until two distinct approvers other than the requester approved; the requester never counts', async () => {
    const { tool, sent } = transferTool();
    const t = use(transferThenDone(100), { extraTools: [tool] });
    const { id, approval } = await parked(t);
    expect(approval).toMatchObject({ quorum: 2, approvalsNeeded: 2, deciders: { requester: 'never' } });

    // The requester holds the approver role, but a quorum is never theirs to decide.
    await expect(t.approvals.decide(REQUESTER, approval.id, { kind: 'approve' })).rejects.toMatchObject({ status: 403 });
    const first = await t.approvals.decide(APPROVER, approval.id, { kind: 'approve', comment: 'ok by me' });
    expect(first).toMatchObject({ status: 'pending', approvalsNeeded: 1, approvals: [{ by: 'bob', comment: 'ok by me' }] });
    // The same person twice is one approval.
    await expect(t.approvals.decide(APPROVER, approval.id, { kind: 'approve' })).rejects.toMatchObject({
      status: 409,
      code: 'approval_already_approved',
    });
    await t.drain();
    expect(sent).toEqual([]);
    expect((await t.store.require(id)).status).toBe('pending_approval');

    const second = await t.approvals.decide(APPROVER_2, approval.id, { kind: 'approve' });
    expect(second).toMatchObject({ status: 'approved', decidedBy: 'dave', approvalsNeeded: 0 });
    expect(second.approvals?.map((v) => v.by)).toEqual(['bob', 'dave']);
    await t.drain();
    expect(sent).toEqual([100]);
    expect((await t.store.require(id)).status).toBe('succeeded');
  });

  it('resets the others’ approvals when an approver edits the arguments', async () => {
    const { tool, sent } = transferTool();
    const t = use(transferThenDone(100), { extraTools: [tool] });
    const { approval } = await parked(t);
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' });
    const edited = await t.approvals.decide(APPROVER_2, approval.id, { kind: 'approve', arguments: { amount: 40 } });
    // Bob approved 100, not 40: only Dave's approval of the edit counts.
    expect(edited).toMatchObject({ status: 'pending', editedBy: 'dave', approvalsNeeded: 1 });
    expect(edited.approvals).toEqual([expect.objectContaining({ by: 'dave', arguments: { amount: 40 } })]);
    // Dave again does not make two; Bob approving the edit does.
    await expect(t.approvals.decide(APPROVER_2, approval.id, { kind: 'approve' })).rejects.toMatchObject({ status: 409 });
    expect(await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' })).toMatchObject({ status: 'approved' });
    await t.drain();
    expect(sent).toEqual([40]);
  });

  it('is rejected by one rejection', async () => {
    const { tool, sent } = transferTool();
    const t = use(transferThenDone(100), { extraTools: [tool] });
    const { id, approval } = await parked(t);
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' });
    expect(await t.approvals.decide(APPROVER_2, approval.id, { kind: 'reject', reason: 'no' })).toMatchObject({ status: 'rejected' });
    await t.drain();
    expect(sent).toEqual([]);
    expect((await t.store.require(id)).status).toBe('succeeded');
  });

  it('counts two approvers racing for the last place once each: the approval is approved once, the tool runs once', async () => {
    const { tool, sent } = transferTool();
    const t = use(transferThenDone(100), { extraTools: [tool] });
    const { approval } = await parked(t);
    const third: Principal = { tenantId: 'acme', userId: 'erin', roles: ['approver'] };
    const results = await Promise.allSettled([
      t.approvals.decide(APPROVER, approval.id, { kind: 'approve' }),
      t.approvals.decide(APPROVER_2, approval.id, { kind: 'approve' }),
      t.approvals.decide(third, approval.id, { kind: 'approve' }),
    ]);
    const ok = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<{ status: string }>).value.status);
    // Two count (one leaves it pending, one approves it), the third finds it decided.
    expect(ok.sort()).toEqual(['approved', 'pending']);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([
      expect.objectContaining({ reason: expect.objectContaining({ code: 'approval_decided' }) }),
    ]);
    const stored = await t.approvals.get(SUPERVISOR, approval.id);
    expect(stored.approvals).toHaveLength(2);
    await t.drain();
    expect(sent).toEqual([100]);
  });
});

describe('escalation on a deadline', () => {
  it('raises the required role after afterMs, announces it, restarts the expiry, and chains by the app-wide default', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const { tool } = transferTool({ escalate: { afterMs: 1000, toRole: 'supervisor' } });
    const admin: Principal = { tenantId: 'acme', userId: 'ann', roles: ['admin'] };
    const t = use(transferThenDone(100), {
      extraTools: [tool],
      now: () => clock,
      approvalTtlMs: 5000,
      escalation: { supervisor: { afterMs: 2000, toRole: 'admin' } },
    });
    const { id, approval } = await parked(t);
    expect(approval).toMatchObject({ requiredRole: 'approver', escalate: { afterMs: 1000, toRole: 'supervisor' } });
    expect(t.queue.filter((q) => q.name === 'escalate').map((q) => q.job)).toEqual([
      expect.objectContaining({ runId: id, step: 0, at: clock + 1000 }),
    ]);
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' });

    // Not yet due: nothing happens.
    expect(await t.approvals.escalateDue(id, 0)).toBe(0);
    clock += 1000;
    expect(await t.approvals.escalateDue(id, 0)).toBe(1);
    const up = await t.approvals.get(SUPERVISOR, approval.id);
    expect(up).toMatchObject({
      status: 'pending',
      requiredRole: 'supervisor',
      expiresAt: new Date(clock + 5000).toISOString(),
      escalations: [{ from: 'approver', to: 'supervisor' }],
      escalate: { afterMs: 2000, toRole: 'admin' },
    });
    // Bob's approval was given under the lower role; an approver can no longer decide.
    expect(up.approvals).toBeUndefined();
    await expect(t.approvals.decide(APPROVER_2, approval.id, { kind: 'approve' })).rejects.toMatchObject({ status: 403 });
    const events = (await t.feed.read('acme', '0')).map((e) => e.event.type);
    expect(events).toContain('approval.escalated');
    const runEvents = await t.redis.xrange(`rein:{${id}}:events`, '-', '+');
    expect(runEvents.some(([, f]) => (f[1] ?? '').includes('approval.escalated'))).toBe(true);
    // Timed again: the new expiry and the next link of the chain.
    expect(t.queue.some((q) => q.name === 'escalate' && (q.job as { at: number }).at === clock + 2000)).toBe(true);
    expect(t.queue.some((q) => q.name === 'expire' && (q.job as { at: number }).at === clock + 5000)).toBe(true);

    clock += 2000;
    expect(await t.approvals.escalateDue(id, 0)).toBe(1);
    expect(await t.approvals.get(SUPERVISOR, approval.id)).toMatchObject({ requiredRole: 'admin' });
    // The chain ends: nothing above admin.
    clock += 10_000;
    expect(await t.approvals.escalateDue(id, 0)).toBe(0);
    expect(admin.roles).toEqual(['admin']);
  });

  it('never lowers the role and does not escalate an approval past its expiry', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const { tool } = transferTool({ escalate: { afterMs: 1000, toRole: 'user' } });
    const t = use(transferThenDone(100), { extraTools: [tool], now: () => clock, approvalTtlMs: 5000 });
    const { id, approval } = await parked(t);
    clock += 1000;
    await t.approvals.escalateDue(id, 0);
    expect(await t.approvals.get(SUPERVISOR, approval.id)).toMatchObject({ requiredRole: 'approver' });
    clock += 60_000;
    expect(await t.approvals.escalateDue(id, 0)).toBe(0);
  });
});

describe('a policy asking for a quorum or an escalation it cannot have', () => {
  it('refuses the call as a failed policy (approval_policy_failed), never parks with it', async () => {
    const tool = defineTool({
      name: 'bad_quorum',
      description: 'x',
      kind: 'write',
      parameters: z.object({}),
      approval: () => ({ risk: 'high', summary: 'x', quorum: 1 }),
      execute: async () => 'ran',
    });
    const t = use(createFakeModel([{ toolCalls: [toolCall('b1', 'bad_quorum', {})] }, { content: 'done' }]), { extraTools: [tool] });
    const id = await t.submit('go', USER);
    await t.drain();
    const call = (await t.store.steps(id))[0]?.toolCalls[0];
    expect(call?.observation).toContain('quorum must be an integer from 2');
  });
});
