import { describe, expect, it } from 'vitest';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

/** Step 0 spends 3,100 tokens (a search); step 1 answers. With a 3,000-token budget, step 1 is out of it. */
const spendThenAnswer = () =>
  createFakeModel([
    { toolCalls: [toolCall('s1', 'search_policy', { query: '退货' })], usage: { promptTokens: 3000, completionTokens: 100 } },
    { content: 'done' },
  ]);

const LIMITS = { maxTokens: 3000 };

async function parkedOnBudget(t: ReturnType<typeof use>) {
  const id = await t.submit('spend', USER, LIMITS);
  await t.drain();
  const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 10 })).approvals;
  if (!approval) throw new Error('the run did not ask for budget');
  return { id, approval };
}

describe("budgets that ask (onBudget: 'ask')", () => {
  it('parks a run out of its token budget with a budget approval proposed from its pace', async () => {
    const t = use(spendThenAnswer(), { profile: { onBudget: 'ask' } });
    const { id, approval } = await parkedOnBudget(t);
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'pending_approval', step: 1, pendingApprovals: [approval.id] });
    // 100 over, plus three more steps at 3,100 a step.
    expect(approval).toMatchObject({
      kind: 'budget',
      toolName: 'budget',
      requiredRole: 'approver',
      step: 1,
      arguments: { extraTokens: run.usage.totalTokens - 3000 + 3 * run.usage.totalTokens, extraCostUsd: 0 },
    });
  });

  it('approved, raises the run’s limit and the run finishes; the decision log records ask, grant and raise', async () => {
    const t = use(spendThenAnswer(), { profile: { onBudget: 'ask' } });
    const { id, approval } = await parkedOnBudget(t);
    const proposed = approval.arguments as { extraTokens: number };
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve', comment: 'worth it' });
    await t.drain();
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'succeeded', finalAnswer: 'done', limits: { maxTokens: 3000 + proposed.extraTokens } });
    const actions = (await t.audit.page('acme', { limit: 100 })).entries.map((e) => [e.action, e.subject.approvalId ?? null]);
    expect(actions).toEqual([
      ['approval.requested', approval.id],
      ['approval.approved', approval.id],
      ['run.budget_raised', null],
    ]);
    const raised = (await t.audit.page('acme', { limit: 100 })).entries[2];
    expect(raised?.data).toMatchObject({ from: { maxTokens: 3000 }, to: { maxTokens: 3000 + proposed.extraTokens } });
  });

  it('honours edited amounts (four eyes: the approver, not the requester)', async () => {
    const t = use(spendThenAnswer(), { profile: { onBudget: 'ask' } });
    const { id, approval } = await parkedOnBudget(t);
    const edit = { kind: 'approve' as const, arguments: { extraTokens: 5000, extraCostUsd: 0 } };
    await expect(
      t.approvals.decide(APPROVER, approval.id, { kind: 'approve', arguments: { extraTokens: -1, extraCostUsd: 0 } }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'invalid_arguments',
    });
    expect(await t.approvals.decide(APPROVER, approval.id, edit)).toMatchObject({ editedBy: 'bob', approvedArguments: edit.arguments });
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', limits: { maxTokens: 8000 } });
    const approved = (await t.audit.page('acme', { limit: 100 })).entries.find((e) => e.action === 'approval.approved');
    expect(approved?.data).toMatchObject({ toolName: 'budget', editedBy: 'bob', approvedArguments: edit.arguments });
  });

  it('four eyes: a requester who holds the approver role cannot grant their own raise (REIN_BUDGET_FOUR_EYES, on by default)', async () => {
    const requester = { ...USER, roles: ['user' as const, 'approver' as const] };
    const t = use(spendThenAnswer(), { profile: { onBudget: 'ask' } });
    await t.submit('spend', requester, LIMITS);
    await t.drain();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 10 })).approvals;
    expect(approval).toMatchObject({ kind: 'budget', requestedBy: 'alice', fourEyes: true });
    // As proposed or edited, the requester is refused, and told why; someone else decides.
    await expect(t.approvals.decide(requester, approval?.id ?? '', { kind: 'approve' })).rejects.toMatchObject({ status: 403 });
    const preview = await t.approvals.preview(requester, approval?.id ?? '');
    expect(preview).toMatchObject({ mayDecide: false, refusal: expect.stringContaining('other than the requester') });
    expect(await t.approvals.decide(APPROVER, approval?.id ?? '', { kind: 'approve' })).toMatchObject({
      status: 'approved',
      decidedBy: 'bob',
    });
  });

  it('with four eyes for budget raises switched off, the requester may grant as proposed (never with edits)', async () => {
    const requester = { ...USER, roles: ['user' as const, 'approver' as const] };
    const lax = use(spendThenAnswer(), { profile: { onBudget: 'ask' }, budgetFourEyes: false });
    await lax.submit('spend', requester, LIMITS);
    await lax.drain();
    const [own] = (await lax.approvals.list(APPROVER, { status: 'pending', limit: 10 })).approvals;
    expect(own?.fourEyes).toBeUndefined();
    const edit = { kind: 'approve' as const, arguments: { extraTokens: 1, extraCostUsd: 0 } };
    await expect(lax.approvals.decide(requester, own?.id ?? '', edit)).rejects.toMatchObject({ status: 403 });
    expect(await lax.approvals.decide(requester, own?.id ?? '', { kind: 'approve' })).toMatchObject({
      status: 'approved',
      decidedBy: 'alice',
    });
  });

  it('an edit past the ceiling of a run’s token limit raises it to the ceiling, and the run goes on', async () => {
    const t = use(spendThenAnswer(), { profile: { onBudget: 'ask' } });
    const { id, approval } = await parkedOnBudget(t);
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve', arguments: { extraTokens: 50_000_000, extraCostUsd: 0 } });
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', limits: { maxTokens: 10_000_000 } });
  });

  it('asks once per step: a grant too small to go on fails the run token_budget', async () => {
    const t = use(spendThenAnswer(), { profile: { onBudget: 'ask' } });
    const { id, approval } = await parkedOnBudget(t);
    await t.approvals.decide(APPROVER, approval.id, { kind: 'approve', arguments: { extraTokens: 50, extraCostUsd: 0 } });
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'token_budget', limits: { maxTokens: 3050 } });
    expect((await t.approvals.list(APPROVER, { limit: 10 })).approvals).toHaveLength(1);
  });

  it('rejected, fails the run token_budget as without asking, its limits unchanged', async () => {
    const model = spendThenAnswer();
    const t = use(model, { profile: { onBudget: 'ask' } });
    const { id, approval } = await parkedOnBudget(t);
    await t.approvals.decide(APPROVER, approval.id, { kind: 'reject', reason: 'too expensive' });
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'token_budget', limits: { maxTokens: 3000 } });
    expect(model.requests).toHaveLength(1);
    const actions = (await t.audit.page('acme', { limit: 100 })).entries.map((e) => e.action);
    expect(actions).toEqual(['approval.requested', 'approval.rejected']);
  });

  it('expired, fails the run token_budget', async () => {
    let clock = Date.now();
    const t = use(spendThenAnswer(), { profile: { onBudget: 'ask' }, now: () => clock, approvalTtlMs: 60_000 });
    const { id, approval } = await parkedOnBudget(t);
    clock += 61_000;
    expect(await t.approvals.expireDue(id, approval.step)).toBe(1);
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'token_budget' });
  });

  it("by default ('fail') fails the run at once, asking nobody", async () => {
    const t = use(spendThenAnswer());
    const id = await t.submit('spend', USER, LIMITS);
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'token_budget' });
    expect((await t.approvals.list(APPROVER, { limit: 10 })).approvals).toEqual([]);
  });
});
