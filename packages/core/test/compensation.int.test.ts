import type { CompensationPolicy } from '@rein/define/internal';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { compensateJobSchema } from '../src/adapters/queue/job-catalog.js';
import { createCompensator } from '../src/features/compensation/compensation.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

/** A run whose one step creates a ticket and a refund (both approved by the user), then fails at its step limit. */
async function failedAfterTwoWrites(policy: CompensationPolicy, clock = { at: Date.now() }) {
  const model = createFakeModel([
    {
      content: 'make good',
      toolCalls: [
        toolCall('t1', 'create_ticket', { orderNo: '2024001', type: 'late shipment', priority: 'high', suggestedAction: 'refund 44.95' }),
        toolCall('r1', 'submit_refund', { orderNo: '2024001', amount: 44.95, reason: 'late shipment' }),
      ],
    },
  ]);
  const t = use(model, { profile: { compensation: policy }, now: () => clock.at });
  const emitted: Array<{ type: string; data: Record<string, unknown> }> = [];
  const compensator = createCompensator({
    store: t.store,
    applier: t.applier,
    ledger: t.ledger,
    tools: t.tools,
    agents: t.agents,
    enqueue: t.enqueue,
    metrics: t.metrics,
    logger: pino({ level: 'silent' }),
    emit: async (_tenant, type, _key, data) => {
      emitted.push({ type, data });
    },
    toolTimeoutMs: 2000,
    approvalTtlMs: 60_000,
    now: () => clock.at,
  });
  const id = await t.submit('make good on 2024001', USER, { maxSteps: 1 });
  await t.drain();
  for (const a of await t.store.approvals(id)) await t.approvals.decide(USER, a.id, { kind: 'approve' });
  await t.drain();
  const run = await t.store.require(id);
  expect(run).toMatchObject({ status: 'failed', reason: 'max_steps' });
  // What the runtime's RunStore calls after the commit that ended the run.
  await compensator.onRunFinished(run);
  /** Runs the queued compensate jobs, as the worker does. */
  const work = async () => {
    for (let i = t.queue.findIndex((q) => q.name === 'compensate'); i >= 0; i = t.queue.findIndex((q) => q.name === 'compensate')) {
      const [job] = t.queue.splice(i, 1);
      await compensator.process(compensateJobSchema.parse(job?.job), false);
    }
  };
  return { t, id, compensator, emitted, work };
}

describe('saga compensation (engine)', () => {
  it("'auto' undoes the completed writes in reverse order at once, through the ledger under keys of their own", async () => {
    const { t, id, emitted, work } = await failedAfterTwoWrites('auto');
    expect((await t.store.compensation(id))?.status).toBe('running');
    await work();
    const c = await t.store.compensation(id);
    expect(c?.status).toBe('done');
    expect(c?.steps.map((s) => [s.tool, s.status])).toEqual([
      ['submit_refund', 'done'],
      ['create_ticket', 'done'],
    ]);
    expect((await t.demo.undoLog(USER.tenantId)).map((u) => u.kind)).toEqual(['refund_reversed', 'ticket_cancelled']);
    expect(await t.ledger.get(id, `${id}:comp:0:r1`)).toMatchObject({ state: 'done', ok: true });
    expect(emitted.map((e) => e.type)).toEqual(['run.compensated']);
    // A duplicate job replays the ledger: nothing is undone twice.
    await t.enqueue('compensate', { runId: id, round: 2 });
    await work();
    expect(await t.demo.undoLog(USER.tenantId)).toHaveLength(2);
  });

  it("'ask' waits for the plan's approval; a plan nobody decides expires and is declined", async () => {
    const clock = { at: Date.now() };
    const { t, id, compensator, work } = await failedAfterTwoWrites('ask', clock);
    const c = await t.store.compensation(id);
    expect(c).toMatchObject({ status: 'pending', trigger: 'ask' });
    const plan = (await t.store.approvals(id)).find((a) => a.id === c?.approvalId);
    expect(plan).toMatchObject({ toolName: 'compensation', status: 'pending', requiredRole: 'approver' });
    expect(t.queue.some((q) => q.name === 'expire')).toBe(true);
    clock.at += 61_000;
    expect(await t.approvals.expireDue(id, plan?.step ?? -1)).toBe(1);
    // What the runtime's approval service calls after a finished run's approval changed.
    await compensator.decided(await t.store.require(id));
    await work();
    expect((await t.store.compensation(id))?.status).toBe('declined');
    expect(await t.demo.undoLog(USER.tenantId)).toEqual([]);
    await expect(t.approvals.decide(APPROVER, plan?.id ?? '', { kind: 'approve' })).rejects.toMatchObject({ status: 410 });
  });

  it('a finish hook run again (the reaper, after a crash) leaves a decided plan as it was', async () => {
    const { t, id, compensator } = await failedAfterTwoWrites('ask');
    const c = await t.store.compensation(id);
    await t.approvals.decide(APPROVER, c?.approvalId ?? '', { kind: 'approve' });
    await compensator.onRunFinished(await t.store.require(id));
    expect((await t.store.approvals(id)).find((a) => a.id === c?.approvalId)?.status).toBe('approved');
    expect(await t.store.compensation(id)).toEqual(c);
  });

  it('an undo that fails stops the saga: compensation_failed, its metric and its webhook event', async () => {
    const { t, id, emitted, work } = await failedAfterTwoWrites('auto');
    const [refund] = await t.demo.refunds(USER.tenantId);
    await t.demo.markPaidOut(USER.tenantId, refund?.refundId ?? '');
    await work();
    const c = await t.store.compensation(id);
    expect(c).toMatchObject({ status: 'failed', code: 'compensation_failed' });
    expect(c?.steps.map((s) => s.status)).toEqual(['failed', 'pending']);
    expect(emitted.map((e) => e.type)).toEqual(['compensation.failed']);
    const metric = await t.metrics.compensations.get();
    expect(metric.values.find((v) => v.labels.tool === 'submit_refund')?.labels.outcome).toBe('failed');
    expect(await t.demo.undoLog(USER.tenantId)).toEqual([]);
  });

  it('a failed saga is retried from the API from the failed undo on, exactly once per undo, by one of two requests', async () => {
    const { t, id, compensator, work } = await failedAfterTwoWrites('auto');
    const [refund] = await t.demo.refunds(USER.tenantId);
    await t.demo.markPaidOut(USER.tenantId, refund?.refundId ?? '');
    await work();
    expect((await t.store.compensation(id))?.status).toBe('failed');
    // Finance claws the payout back; an approver asks for the undo again, twice at once.
    const refunds = (t.demo as unknown as { keys(tenant: string): { refunds: string } }).keys(USER.tenantId).refunds;
    await t.redis.hset(refunds, refund?.refundId ?? '', JSON.stringify({ ...refund, status: 'submitted' }));
    const tries = await Promise.allSettled([compensator.request(APPROVER, id), compensator.request(APPROVER, id)]);
    expect(tries.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(tries.find((r) => r.status === 'rejected')).toMatchObject({ reason: { code: 'compensation_exists' } });
    expect((await t.store.compensation(id))?.steps.map((s) => [s.status, s.retry])).toEqual([
      ['pending', 1],
      ['pending', undefined],
    ]);
    await work();
    const c = await t.store.compensation(id);
    expect(c).toMatchObject({ status: 'done', round: 2 });
    expect((await t.demo.undoLog(USER.tenantId)).map((u) => u.kind)).toEqual(['refund_reversed', 'ticket_cancelled']);
    // A duplicate job replays the ledger: nothing is undone twice.
    await t.enqueue('compensate', { runId: id, round: 2 });
    await work();
    expect(await t.demo.undoLog(USER.tenantId)).toHaveLength(2);
  });

  it("'never' leaves the writes alone", async () => {
    const { t, id } = await failedAfterTwoWrites('never');
    expect(await t.store.compensation(id)).toBeNull();
    expect(t.queue.some((q) => q.name === 'compensate')).toBe(false);
  });
});
