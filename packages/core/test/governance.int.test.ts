import type { Escalation, Principal } from '@rein/contract';
import { defineTool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { auditHash, verifyAuditChain } from '../src/policy/audit/audit-chain.js';
import { tenantKeys } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
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

describe('the decision log, a per-tenant hash chain', () => {
  it('records every governance event of a run in order, verifies, and names an entry altered in Redis', async () => {
    const { tool } = transferTool();
    const t = use(transferThenDone(100), { extraTools: [tool] });
    const { id, approval } = await parked(t);
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' });
    await t.approvals.decide(APPROVER_2, approval.id, { kind: 'approve', arguments: { amount: 40 } });
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve', comment: 'fine' });
    const { entries } = await t.audit.page('acme', { limit: 100 });
    expect(entries.map((e) => [e.seq, e.action, e.actor])).toEqual([
      [1, 'approval.requested', 'alice'],
      [2, 'approval.voted', 'bob'],
      [3, 'approval.voted', 'dave'],
      [4, 'approval.approved', 'bob'],
    ]);
    expect(entries[3]).toMatchObject({
      subject: { runId: id, approvalId: approval.id },
      data: { editedBy: 'dave', approvedArguments: { amount: 40 }, approvedBy: ['dave', 'bob'], comment: 'fine' },
    });
    expect(verifyAuditChain(entries)).toMatchObject({ ok: true, entries: 4 });
    // Another tenant's chain is its own.
    expect((await t.audit.page('other', { limit: 10 })).entries).toEqual([]);

    // Alter entry 2 (who voted) in Redis, as someone with Redis access might.
    const key = tenantKeys('acme').audit;
    const stored = JSON.parse((await t.redis.hget(key, '2')) ?? '{}');
    await t.redis.hset(key, '2', JSON.stringify({ ...stored, actor: 'mallory' }));
    const altered = await t.audit.page('acme', { limit: 100 });
    expect(verifyAuditChain(altered.entries)).toMatchObject({ ok: false, seq: 2, problem: expect.stringContaining('altered') });
    // Recomputing its hash too breaks the link to entry 3.
    const forged = { ...stored, actor: 'mallory' };
    await t.redis.hset(key, '2', JSON.stringify({ ...forged, hash: auditHash(forged) }));
    expect(verifyAuditChain((await t.audit.page('acme', { limit: 100 })).entries)).toMatchObject({ ok: false, seq: 3 });
    // Swapping two entries is a reorder.
    await t.redis.hset(key, '2', JSON.stringify(stored));
    const [e3, e4] = await t.redis.hmget(key, '3', '4');
    await t.redis.hset(key, '3', e4 ?? '', '4', e3 ?? '');
    expect(verifyAuditChain((await t.audit.page('acme', { limit: 100 })).entries)).toMatchObject({ ok: false, seq: 3 });
  });

  it('logs a cancel with the approvals it withdrew, and an expiry and an escalation as the system', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const { tool } = transferTool({ escalate: { afterMs: 1000, toRole: 'supervisor' } });
    // The model asks again after the expiry: the run parks a second time, and is cancelled.
    const model = createFakeModel([
      { toolCalls: [toolCall('w1', 'wire_transfer', { amount: 1 })] },
      { toolCalls: [toolCall('w2', 'wire_transfer', { amount: 2 })] },
    ]);
    const t = use(model, { extraTools: [tool], now: () => clock, approvalTtlMs: 5000 });
    const { id } = await parked(t);
    clock += 1000;
    await t.approvals.escalateDue(id, 0);
    clock += 5000;
    await t.approvals.expireDue(id, 0);
    await t.drain();
    await t.runs.cancel(REQUESTER, id);
    const { entries } = await t.audit.page('acme', { limit: 100 });
    expect(entries.map((e) => [e.action, e.actor])).toEqual([
      ['approval.requested', 'alice'],
      ['approval.escalated', 'system'],
      ['approval.expired', 'system'],
      ['approval.requested', 'alice'],
      ['approval.withdrawn', 'alice'],
      ['run.cancelled', 'alice'],
    ]);
    expect(entries[1]?.data).toMatchObject({ from: 'approver', to: 'supervisor' });
    expect(verifyAuditChain(entries).ok).toBe(true);
  });

  it('pages by time and cursor, and never forks the chain under concurrent appends', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const t = use(createFakeModel([]), { now: () => clock });
    const record = (n: number) => ({
      tenantId: 'acme',
      actor: `u${n}`,
      action: 'webhook.deleted' as const,
      subject: { webhookId: `wh_${n}` },
    });
    await Promise.all(Array.from({ length: 30 }, (_, n) => t.audit.append([record(n)])));
    clock += 60_000;
    await t.audit.append([record(99)]);
    const all = await t.audit.page('acme', { limit: 1000 });
    expect(all.entries).toHaveLength(31);
    expect(verifyAuditChain(all.entries).ok).toBe(true);
    const first = await t.audit.page('acme', { limit: 10 });
    expect(first.nextCursor).toBe('10');
    const next = await t.audit.page('acme', { limit: 10, cursor: 10 });
    expect(next.entries[0]?.seq).toBe(11);
    const late = await t.audit.page('acme', { limit: 10, from: clock });
    expect(late.entries.map((e) => e.actor)).toEqual(['u99']);
    const early = await t.audit.page('acme', { limit: 100, to: clock - 1 });
    expect(early.entries).toHaveLength(30);
  });
});
