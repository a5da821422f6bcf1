import { defineTool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { idempotencyKey } from '../src/policy/step/call-identity.js';
import { StaleStepError } from '../src/shared/errors.js';
import { runKeys } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

const lateOrderTurns = () => [
  {
    content: 'create the ticket',
    toolCalls: [
      toolCall('t1', 'create_ticket', { orderNo: '2024001', type: '超时发货', priority: 'high', suggestedAction: '补偿 44.95 元' }),
    ],
  },
  (req: { messages: Array<{ role: string; content?: string | null }> }) => ({ content: `final: ${req.messages.at(-1)?.content}` }),
];

describe('journaled decisions (I3)', () => {
  it('reuses the journaled decision when a step is retried, so tokens are paid and counted once', async () => {
    const model = createFakeModel([{ content: 'done' }]);
    const t = use(model);
    const id = await t.submit('policy?');
    const run = await t.store.require(id);
    // First attempt dies after journaling the decision but before committing the step.
    await t.journal.record(id, {
      schemaVersion: 1,
      step: 0,
      model: 'fake-model',
      content: 'journaled thought',
      toolCalls: [toolCall('c1', 'search_policy', { query: '退货' })],
      usage: { promptTokens: 100, completionTokens: 10 },
      durationMs: 5,
      createdAt: run.createdAt,
    });
    await t.drain();
    expect(model.requests).toHaveLength(1); // only step 1 called the model
    expect(model.requests[0]?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    const after = await t.store.require(id);
    expect(after.usage.totalTokens).toBe(220);
    expect((await t.store.steps(id))[0]?.thought).toBe('journaled thought');
  });
});

describe('compare-and-set commits (I2)', () => {
  it("refuses a stale worker's commit and keeps the newer state", async () => {
    const t = use(createFakeModel([{ content: 'answer' }]));
    const id = await t.submit('hello');
    const stale = await t.store.require(id);
    await t.drain(); // another worker finishes the run
    await expect(
      t.store.compareAndSet({ from: stale, to: { ...stale, status: 'failed', reason: 'internal_error' } }),
    ).rejects.toBeInstanceOf(StaleStepError);
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'answer' });
  });

  it('lets a duplicate job of a committed step just make sure the next job exists', async () => {
    const model = createFakeModel([{ toolCalls: [toolCall('c1', 'search_policy', { query: '退货' })] }, { content: 'done' }]);
    const t = use(model);
    const id = await t.submit('policy?');
    await t.steps.process({ runId: id, step: 0 });
    t.queue.length = 0; // the enqueue of step 1 was "lost"
    expect(await t.steps.process({ runId: id, step: 0 })).toBe('already_committed');
    expect(t.queue).toEqual([{ name: 'step', job: { runId: id, step: 1, tenantId: USER.tenantId } }]);
    await t.drain();
    expect(model.requests).toHaveLength(2);
    expect((await t.store.require(id)).usage.totalTokens).toBe(220);
  });

  it('lets two workers race on one step and commits exactly one of them', async () => {
    const model = createFakeModel([{ toolCalls: [toolCall('c1', 'query_order', { orderNo: '2024001' })] }, { content: 'done' }]);
    const t = use(model);
    const id = await t.submit('order?');
    const outcomes = await Promise.all([t.steps.process({ runId: id, step: 0 }), t.steps.process({ runId: id, step: 0 })]);
    expect(outcomes.sort()).toEqual(['already_committed', 'continued']);
    expect((await t.store.messages(id)).filter((m) => m.role === 'tool')).toHaveLength(1);
    expect((await t.store.require(id)).step).toBe(1);
  });
  it('counts nothing for an attempt whose commit was stale: the counters follow committed records', async () => {
    const model = createFakeModel([
      {
        toolCalls: [
          toolCall('r1', 'query_order', { orderNo: '2024001' }),
          toolCall('w1', 'create_ticket', { orderNo: '2024001', type: '超时发货', priority: 'high', suggestedAction: '补偿 44.95 元' }),
        ],
      },
    ]);
    const t = use(model);
    const id = await t.submit('order?');
    // Another writer moves the run on just before this attempt's step commit lands.
    const commit = t.store.compareAndSet.bind(t.store);
    let raced = 0;
    t.store.compareAndSet = async (c) => {
      if (c.step && raced++ === 0) {
        const fresh = await t.store.require(id);
        await commit({ from: fresh, to: { ...fresh, updatedAt: new Date().toISOString() } });
      }
      return commit(c);
    };
    const total = async (m: { get(): Promise<{ values: Array<{ value: number }> }> }) =>
      (await m.get()).values.reduce((sum, v) => sum + v.value, 0);
    expect(await t.steps.process({ runId: id, step: 0 })).toBe('already_committed');
    expect(raced).toBe(1);
    expect(await t.store.steps(id)).toHaveLength(0);
    expect(await total(t.metrics.toolCalls)).toBe(0);
    expect(await total(t.metrics.approvalsCreated)).toBe(0);
    expect(await total(t.metrics.steps)).toBe(0);
    // The step that does commit counts its calls and its approval once.
    expect(await t.steps.process({ runId: id, step: 0 })).toBe('parked');
    expect(await total(t.metrics.toolCalls)).toBe(2);
    expect((await t.metrics.toolCalls.get()).values.map((v) => v.labels)).toEqual(
      expect.arrayContaining([
        { tool: 'query_order', outcome: 'ok' },
        { tool: 'create_ticket', outcome: 'awaiting_approval' },
      ]),
    );
    expect(await total(t.metrics.approvalsCreated)).toBe(1);
  });
});

describe('approval before effect (I5) and exactly-once effects (I4)', () => {
  it('parks the run: no ticket before approval, exactly one after, even when the resume is replayed', async () => {
    const t = use(createFakeModel(lateOrderTurns()));
    const id = await t.submit('2024001 not shipped');
    await t.drain();
    const parked = await t.store.require(id);
    expect(parked.status).toBe('pending_approval');
    expect(parked.pendingApprovals).toHaveLength(1);
    expect(await t.demo.tickets(USER.tenantId)).toHaveLength(0);

    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
    expect(approval).toMatchObject({ toolName: 'create_ticket', risk: 'high', requestedBy: 'alice', status: 'pending' });
    await t.approvals.decide(APPROVER, approval?.id ?? '', { kind: 'approve', comment: 'ok' });
    // The resume is scheduled, and the expiry timer, now pointless, is gone.
    // It continues the run's own trace, not the approver's.
    expect(t.queue).toEqual([{ name: 'resume', job: { runId: id, step: 0, traceparent: parked.traceparent } }]);
    expect(parked.traceparent).toMatch(new RegExp(`^00-${parked.traceId}-[0-9a-f]{16}-0[01]$`));
    // The resume runs twice (a duplicate delivery) and step 0 is replayed once more.
    const resume = { runId: id, step: 0 };
    await Promise.all([t.steps.process(resume), t.steps.process(resume)]);
    await t.steps.process(resume);
    await t.drain();

    const tickets = await t.demo.tickets(USER.tenantId);
    expect(tickets).toHaveLength(1);
    const done = await t.store.require(id);
    expect(done).toMatchObject({ status: 'succeeded' });
    expect(done.finalAnswer).toContain(tickets[0]?.ticketId);
    // Tokens of the parked step were counted once, not again on resume.
    expect(done.usage.totalTokens).toBe(220);
  });

  it('reuses a recorded effect when the step is replayed after the tool ran but before the commit', async () => {
    const t = use(createFakeModel(lateOrderTurns()));
    const id = await t.submit('2024001 not shipped');
    await t.drain();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
    await t.approvals.decide(USER, approval?.id ?? '', { kind: 'approve' });
    // A worker ran the tool and recorded its result, then died before committing.
    const key = idempotencyKey(id, 0, 't1');
    await t.ledger.recordIntent(id, key, 'create_ticket');
    const ticket = await t.demo.createTicket(USER.tenantId, key, {
      orderNo: '2024001',
      type: '超时发货',
      priority: 'high',
      suggestedAction: 'x',
      createdBy: 'alice',
    });
    await t.ledger.recordResult(id, key, 'create_ticket', true, JSON.stringify(ticket));
    await t.drain();
    expect(await t.demo.tickets(USER.tenantId)).toHaveLength(1);
    const step = (await t.store.steps(id))[0];
    expect(step?.toolCalls[0]).toMatchObject({ outcome: 'ok', observation: JSON.stringify(ticket) });
  });

  it('feeds a rejection back to the model as "rejected by <user>: <reason>" and creates nothing', async () => {
    const model = createFakeModel(lateOrderTurns());
    const t = use(model);
    const id = await t.submit('2024001 not shipped');
    await t.drain();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
    await t.approvals.decide(APPROVER, approval?.id ?? '', { kind: 'reject', reason: 'compensation too high' });
    await t.drain();
    expect(await t.demo.tickets(USER.tenantId)).toHaveLength(0);
    const lastPrompt = model.requests.at(-1)?.messages.at(-1);
    expect(lastPrompt).toMatchObject({
      role: 'tool',
      tool_call_id: 't1',
      content: expect.stringContaining('Not executed: rejected by bob: compensation too high'),
    });
    const run = await t.store.require(id);
    expect(run.status).toBe('succeeded');
    expect(run.finalAnswer).toContain('Not executed: rejected by bob: compensation too high');
  });

  it('still runs the read tools of a reply whose write tool waits for approval', async () => {
    const model = createFakeModel([
      {
        toolCalls: [
          toolCall('r1', 'query_order', { orderNo: '2024001' }),
          toolCall('w1', 'update_order_note', { orderNo: '2024001', note: 'VIP' }),
        ],
      },
      { content: 'done' },
    ]);
    const t = use(model);
    const id = await t.submit('note it');
    await t.drain();
    const calls = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(calls.map((c) => c.outcome)).toEqual(['ok', 'awaiting_approval']);
    expect((await t.demo.order(USER.tenantId, '2024001'))?.note).toBeUndefined();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
    await t.approvals.decide(APPROVER, approval?.id ?? '', { kind: 'approve' });
    await t.drain();
    expect((await t.demo.order(USER.tenantId, '2024001'))?.note).toBe('VIP');
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded' });
  });

  it('marks an interrupted effect of a tool that ignores idempotency keys as uncertain instead of re-running it', async () => {
    let executions = 0;
    const charge = defineTool({
      name: 'charge_card',
      description: 'test tool without idempotency support',
      kind: 'write',
      parameters: z.object({ amount: z.number() }),
      honoursIdempotencyKey: false,
      async execute() {
        executions++;
        return { charged: true };
      },
    });
    const model = createFakeModel([{ toolCalls: [toolCall('k1', 'charge_card', { amount: 5 })] }, { content: 'done' }]);
    const t = use(model, { extraTools: [charge] });
    const id = await t.submit('charge');
    // A previous attempt recorded the intent and died mid-call.
    await t.ledger.recordIntent(id, idempotencyKey(id, 0, 'k1'), 'charge_card');
    await t.drain();
    expect(executions).toBe(0);
    const call = (await t.store.steps(id))[0]?.toolCalls[0];
    expect(call?.outcome).toBe('uncertain');
    expect((await t.metrics.effectsUncertain.get()).values[0]?.value).toBe(1);
    // …and the approvers of the tenant see it, to reconcile by hand.
    expect(await t.feed.uncertainEffects(USER.tenantId)).toMatchObject([
      { type: 'effect.uncertain', runId: id, tool: 'charge_card', toolCallId: 'k1' },
    ]);
  });
  it('runs a read tool again after a crash mid-call: a read has no effect, so the ledger keeps nothing for it', async () => {
    let executions = 0;
    const lookup = defineTool({
      name: 'lookup_rate',
      description: 'test read tool',
      kind: 'read',
      parameters: z.object({ currency: z.string() }),
      async execute() {
        executions++;
        return { rate: 7.1 };
      },
    });
    const model = createFakeModel([{ toolCalls: [toolCall('r1', 'lookup_rate', { currency: 'CNY' })] }, { content: 'done' }]);
    const t = use(model, { extraTools: [lookup] });
    const id = await t.submit('rate?');
    // An intent as a worker that died mid-call would have left it (before reads skipped the ledger).
    await t.ledger.recordIntent(id, idempotencyKey(id, 0, 'r1'), 'lookup_rate');
    await t.drain(1);
    expect(executions).toBe(1);
    expect((await t.store.steps(id))[0]?.toolCalls[0]?.outcome).toBe('ok');
    expect(await t.ledger.get(id, idempotencyKey(id, 0, 'r1'))).toMatchObject({ state: 'intent' }); // not written by the read
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded' });
    expect(await t.redis.exists(runKeys(id).effects)).toBe(0); // the terminal commit drops the ledger
  });
});

describe('approval decisions', () => {
  it('lets exactly one of two racing approvers win; the other gets 409', async () => {
    const t = use(createFakeModel(lateOrderTurns()));
    await t.submit('2024001 not shipped');
    await t.drain();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
    const supervisor = { tenantId: 'acme', userId: 'carol', roles: ['supervisor' as const] };
    const results = await Promise.allSettled([
      t.approvals.decide(APPROVER, approval?.id ?? '', { kind: 'approve' }),
      t.approvals.decide(supervisor, approval?.id ?? '', { kind: 'reject', reason: 'no' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const loser = results.find((r) => r.status === 'rejected');
    expect((loser as PromiseRejectedResult).reason).toMatchObject({ code: 'approval_decided', status: 409 });
  });

  it("hides another tenant's approval, and another plain user's, as a 404", async () => {
    const t = use(createFakeModel(lateOrderTurns()));
    await t.submit('2024001 not shipped');
    await t.drain();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
    const outsider = { tenantId: 'other', userId: 'mallory', roles: ['admin' as const] };
    await expect(t.approvals.decide(outsider, approval?.id ?? '', { kind: 'approve' })).rejects.toMatchObject({ status: 404 });
    const colleague = { tenantId: 'acme', userId: 'dave', roles: ['user' as const] };
    await expect(t.approvals.decide(colleague, approval?.id ?? '', { kind: 'approve' })).rejects.toMatchObject({ status: 404 });
  });

  it('withdraws pending approvals when the run is cancelled', async () => {
    const t = use(createFakeModel(lateOrderTurns()));
    const id = await t.submit('2024001 not shipped');
    await t.drain();
    await t.runs.cancel(USER, id);
    expect(await t.store.require(id)).toMatchObject({ status: 'cancelled', reason: 'cancelled', pendingApprovals: [] });
    const [approval] = (await t.approvals.list(APPROVER, { limit: 100 })).approvals;
    expect(approval?.status).toBe('withdrawn');
    await expect(t.approvals.decide(APPROVER, approval?.id ?? '', { kind: 'approve' })).rejects.toMatchObject({ status: 409 });
  });
});
