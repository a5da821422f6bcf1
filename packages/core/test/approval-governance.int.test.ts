import type { Approval, Principal } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { runKeys } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();
const SUPERVISOR: Principal = { tenantId: 'acme', userId: 'carol', roles: ['supervisor'] };
const SUPERVISOR_REQUESTER: Principal = { tenantId: 'acme', userId: 'alice', roles: ['supervisor'] };

/** A model that asks for one write call, then answers with the observation it got. */
const writeThenEcho = (name: string, args: unknown) =>
  createFakeModel([{ toolCalls: [toolCall('w1', name, args)] }, (req) => ({ content: `final: ${req.messages.at(-1)?.content}` })]);

async function parked(t: ReturnType<typeof use>, input: string, principal: Principal = USER) {
  const id = await t.submit(input, principal);
  await t.drain();
  const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
  if (!approval) throw new Error('the run did not park');
  return { id, approval };
}

describe('four eyes on critical actions', () => {
  it('makes a refund over 500 critical: a supervisor other than the requester must decide', async () => {
    const t = use(writeThenEcho('submit_refund', { orderNo: '2024001', amount: 800, reason: '超时发货' }));
    const { id, approval } = await parked(t, 'refund 800', SUPERVISOR_REQUESTER);
    expect(approval).toMatchObject({ risk: 'critical', requiredRole: 'supervisor', summary: 'Refund 800.00 on order 2024001: 超时发货' });
    await expect(t.approvals.decide(SUPERVISOR_REQUESTER, approval.id, { kind: 'approve' })).rejects.toMatchObject({
      status: 403,
      code: 'forbidden',
    });
    await expect(t.approvals.decide(APPROVER, approval.id, { kind: 'approve' })).rejects.toMatchObject({ status: 403 });
    await t.approvals.decide(SUPERVISOR, approval.id, { kind: 'approve', comment: 'customer is VIP' });
    await t.drain();
    expect((await t.demo.refunds(USER.tenantId)).map((r) => r.amount)).toEqual([800]);
    expect((await t.store.require(id)).status).toBe('succeeded');
  });
});

describe('approve with edits', () => {
  it('runs the edited arguments, keeps the stricter requirement, and shows both versions in the trace', async () => {
    const t = use(writeThenEcho('submit_refund', { orderNo: '2024001', amount: 800, reason: '超时发货' }));
    const { id, approval } = await parked(t, 'refund 800');
    const decided = await t.approvals.decide(SUPERVISOR, approval.id, {
      kind: 'approve',
      arguments: { orderNo: '2024001', amount: 44.95, reason: '超时发货 5% 补偿' },
    });
    // Lowering the amount below 500 does not lower the requirement below the original's.
    expect(decided).toMatchObject({
      risk: 'critical',
      requiredRole: 'supervisor',
      editedBy: 'carol',
      arguments: { amount: 800 },
      approvedArguments: { amount: 44.95 },
    });
    await t.drain();
    expect((await t.demo.refunds(USER.tenantId)).map((r) => r.amount)).toEqual([44.95]);
    const trace = await t.runs.trace(USER, id);
    const call = trace.steps[0]?.toolCalls[0];
    expect(call).toMatchObject({
      outcome: 'ok',
      arguments: { amount: 44.95 },
      approval: { arguments: { amount: 800 }, approvedArguments: { amount: 44.95 }, editedBy: 'carol' },
    });
    expect(call?.observation).toMatch(/^Approved by carol with edited arguments/);
  });

  it('re-judges an edit: raising a refund over 500 makes it critical, so an approver may no longer decide', async () => {
    const t = use(writeThenEcho('submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' }));
    const { approval } = await parked(t, 'refund 100');
    expect(approval.risk).toBe('high');
    const raise = { kind: 'approve' as const, arguments: { orderNo: '2024001', amount: 600, reason: 'late' } };
    await expect(t.approvals.decide(APPROVER, approval.id, raise)).rejects.toMatchObject({ status: 403 });
    expect(await t.approvals.decide(SUPERVISOR, approval.id, raise)).toMatchObject({ risk: 'critical', status: 'approved' });
  });

  it('previews an edit without deciding: the judgement decide would make, who may then decide, the tool schema', async () => {
    const t = use(writeThenEcho('submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' }));
    const { approval } = await parked(t, 'refund 100');
    const asIs = await t.approvals.preview(APPROVER, approval.id);
    expect(asIs).toMatchObject({ mayDecide: true, approval: { risk: 'high', status: 'pending' } });
    expect(asIs.parameters.submit_refund).toMatchObject({ type: 'object', properties: { amount: { type: 'number' } } });
    const raise = { orderNo: '2024001', amount: 600, reason: 'late' };
    const judged = await t.approvals.preview(APPROVER, approval.id, raise);
    expect(judged).toMatchObject({
      mayDecide: false,
      approval: { risk: 'critical', requiredRole: 'supervisor', editedBy: APPROVER.userId, approvedArguments: { amount: 600 } },
    });
    expect(judged.refusal).toContain('supervisor');
    expect((await t.approvals.preview(SUPERVISOR, approval.id, raise)).mayDecide).toBe(true);
    // Nothing was decided or edited.
    const after = await t.approvals.get(APPROVER, approval.id);
    expect(after).toMatchObject({ status: 'pending', risk: 'high', argsHash: approval.argsHash });
    expect(after.approvedArguments).toBeUndefined();
    await expect(t.approvals.preview(APPROVER, approval.id, { orderNo: '2024001', amount: -1, reason: 'late' })).rejects.toMatchObject({
      status: 400,
      code: 'invalid_arguments',
    });
  });

  it('refuses edited arguments that do not match the tool schema with 400', async () => {
    const t = use(writeThenEcho('submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' }));
    const { approval } = await parked(t, 'refund 100');
    await expect(
      t.approvals.decide(APPROVER, approval.id, { kind: 'approve', arguments: { orderNo: '2024001', amount: -5 } }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'invalid_arguments',
    });
    expect((await t.approvals.get(APPROVER, approval.id)).status).toBe('pending');
  });
});

describe('an approval is a capability bound to one exact call', () => {
  /** Rewrites the stored approval, as a bug or an attacker with Redis access might. */
  async function tamper(t: ReturnType<typeof use>, runId: string, change: (a: Approval) => Approval) {
    const key = runKeys(runId).approvals;
    const [[id, raw] = ['', '']] = Object.entries(await t.redis.hgetall(key));
    await t.redis.hset(key, id, JSON.stringify(change(JSON.parse(raw))));
  }

  it('refuses to run arguments that differ from what was approved', async () => {
    const t = use(writeThenEcho('submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' }));
    const { id, approval } = await parked(t, 'refund 100');
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' });
    await tamper(t, id, (a) => ({ ...a, approvedArguments: { orderNo: '2024001', amount: 899, reason: 'late' } }));
    await t.drain();
    expect(await t.demo.refunds(USER.tenantId)).toEqual([]);
    const call = (await t.store.steps(id))[0]?.toolCalls[0];
    expect(call).toMatchObject({ outcome: 'rejected', observation: expect.stringContaining('arguments differ from what approval') });
  });

  it('refuses an approval judged by an older version of the tool policy', async () => {
    const t = use(writeThenEcho('update_order_note', { orderNo: '2024001', note: 'VIP' }));
    const { id, approval } = await parked(t, 'note');
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' });
    await tamper(t, id, (a) => ({ ...a, policyVersion: 99 }));
    await t.drain();
    expect((await t.demo.order(USER.tenantId, '2024001'))?.note).toBeUndefined();
    expect((await t.store.steps(id))[0]?.toolCalls[0]?.observation).toContain('policy of update_order_note changed');
  });
});

describe('expiry', () => {
  it('expires an undecided approval by itself, tells the model, and the run goes on', async () => {
    let clock = Date.parse('2026-11-29T10:00:00Z');
    const t = use(writeThenEcho('create_ticket', { orderNo: '2024001', type: '超时发货', priority: 'high', suggestedAction: 'x' }), {
      approvalTtlMs: 60_000,
      now: () => clock,
    });
    const { id, approval } = await parked(t, 'ticket');
    const expiry = t.queue.find((q) => q.name === 'expire');
    expect(expiry).toMatchObject({ job: { runId: id, step: 0, at: Date.parse(approval.expiresAt) }, delayMs: 60_000 });

    expect(await t.approvals.expireDue(id, 0)).toBe(0); // not yet due: nothing happens
    clock += 60_001;
    expect(await t.approvals.expireDue(id, 0)).toBe(1); // what the delayed job does when it fires
    expect((await t.approvals.get(APPROVER, approval.id)).status).toBe('expired');
    await t.drain();
    expect(await t.demo.tickets(USER.tenantId)).toEqual([]);
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'succeeded' });
    expect(run.finalAnswer).toContain('nobody decided before the approval expired');
    await expect(t.approvals.decide(APPROVER, approval.id, { kind: 'approve' })).rejects.toMatchObject({
      status: 410,
      code: 'approval_expired',
    });
  });

  it('answers 410 to a decision that arrives after the expiry instant, before the job fired', async () => {
    let clock = Date.parse('2026-11-29T10:00:00Z');
    const t = use(writeThenEcho('send_email', { to: 'zhangsan@example.com', subject: 'hi', body: 'sorry' }), { now: () => clock });
    const { id, approval } = await parked(t, 'mail');
    clock += 61_000;
    await expect(t.approvals.decide(USER, approval.id, { kind: 'approve' })).rejects.toMatchObject({ status: 410 });
    expect((await t.approvals.get(APPROVER, approval.id)).status).toBe('expired');
    expect(t.queue.some((q) => q.name === 'resume' && q.job.runId === id)).toBe(true);
  });
});

describe('the approval feed', () => {
  it('publishes requests and decisions to the tenant feed, not to other tenants', async () => {
    const t = use(writeThenEcho('update_order_note', { orderNo: '2024001', note: 'VIP' }));
    const { approval } = await parked(t, 'note');
    await t.approvals.decide(APPROVER, approval.id, { kind: 'reject', reason: 'no' });
    const events = await t.feed.read(USER.tenantId, '0');
    expect(events.map((e) => [e.event.type, 'status' in e.event ? e.event.status : null])).toEqual([
      ['approval.requested', 'pending'],
      ['approval.decided', 'rejected'],
    ]);
    expect(await t.feed.read('globex', '0')).toEqual([]);
  });
});

describe('who decides, who sees, who cancels', () => {
  const COLLEAGUE: Principal = { tenantId: 'acme', userId: 'dave', roles: ['user'] };

  it('lets a requester approve their own request only as proposed; an edit needs another person', async () => {
    const t = use(writeThenEcho('submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' }));
    const { approval } = await parked(t, 'refund 100');
    const redirect = { kind: 'approve' as const, arguments: { orderNo: 'A12345', amount: 100, reason: 'late' } };
    await expect(t.approvals.decide(USER, approval.id, redirect)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    expect((await t.approvals.get(APPROVER, approval.id)).status).toBe('pending');
    await t.approvals.decide(USER, approval.id, { kind: 'approve' });
    await t.drain();
    expect((await t.demo.refunds(USER.tenantId)).map((r) => [r.orderNo, r.amount])).toEqual([['2024001', 100]]);
  });

  it("enforces the policy's requiredRole: a plain requester cannot approve an e-mail that needs an approver", async () => {
    const t = use(writeThenEcho('send_email', { to: 'zhangsan@example.com', subject: 'hi', body: 'sorry' }));
    const { approval } = await parked(t, 'mail');
    expect(approval).toMatchObject({ requiredRole: 'approver', deciders: { role: 'approver', requester: 'as_proposed' } });
    await expect(t.approvals.decide(USER, approval.id, { kind: 'approve' })).rejects.toMatchObject({ status: 403 });
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve' });
    await t.drain();
    expect(await t.demo.emails(USER.tenantId)).toHaveLength(1);
  });

  it("hides a user's runs and approvals from other plain users of the tenant, and only lets the owner or an approver cancel", async () => {
    const t = use(writeThenEcho('update_order_note', { orderNo: '2024001', note: 'VIP' }));
    const { id, approval } = await parked(t, 'note');
    await expect(t.runs.get(COLLEAGUE, id)).rejects.toMatchObject({ status: 404 });
    await expect(t.runs.trace(COLLEAGUE, id)).rejects.toMatchObject({ status: 404 });
    await expect(t.runs.cancel(COLLEAGUE, id)).rejects.toMatchObject({ status: 404 });
    await expect(t.approvals.get(COLLEAGUE, approval.id)).rejects.toMatchObject({ status: 404 });
    expect((await t.approvals.list(COLLEAGUE, { status: 'pending', limit: 100 })).approvals).toEqual([]);
    expect((await t.runs.get(APPROVER, id)).status).toBe('pending_approval');
    expect((await t.runs.cancel(APPROVER, id)).status).toBe('cancelled');
  });
});
