import { compensationKey, FAULTS_KEY, runKeys } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

/** The scripted model's two-write scenario: ticket, refund, then an e-mail that needs an approver. */
const MAKE_GOOD = 'Make good on late order 2024001';
const TENANT = KEYS.user.tenantId;

interface CompensationView {
  status: string;
  approvalId?: string;
  code?: string;
  steps: Array<{ tool: string; undoTool: string; status: string; step: number; toolCallId: string; observation?: string }>;
}
type RunBody = { id: string; status: string; pendingApprovals: Array<{ id: string; toolName: string }>; compensation?: CompensationView };

let redis: TestRedis;
let client: Redis;
let demo: DemoStore;
let fleet: Fleet;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  demo = new DemoStore(client);
  // Fault injection lets a test make undo calls hang; the tool timeout outlasts the hang's kill.
  fleet = await startFleet({ redisUrl: redis.url, env: { REIN_FAULT_INJECTION: 'on', REIN_TOOL_TIMEOUT_MS: '60000' } });
});
afterAll(async () => {
  await fleet?.stop();
  client?.disconnect();
  await redis?.stop();
});

/** Approves the run's pending approval of `tool` as `key`, once the run is parked on it. */
async function approveNext(id: string, tool: string, key: string) {
  const run = (await fleet.waitForRun(id, (r) => (r as RunBody).pendingApprovals?.some((a) => a.toolName === tool))) as RunBody;
  const approval = run.pendingApprovals.find((a) => a.toolName === tool);
  expect((await fleet.callApprover('POST', `/v1/approvals/${approval?.id}/approve`, key, {})).status).toBe(200);
}

/** A run that created a ticket and a refund, then is cancelled while waiting for its e-mail's approval. */
async function cancelledAfterTwoWrites(): Promise<string> {
  const { body } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: MAKE_GOOD });
  const id = body.id as string;
  await approveNext(id, 'create_ticket', KEYS.user.key);
  await approveNext(id, 'submit_refund', KEYS.user.key);
  await fleet.waitForRun(id, (r) => (r as RunBody).pendingApprovals?.some((a) => a.toolName === 'send_email'));
  expect((await fleet.callApi('POST', `/v1/runs/${id}/cancel`)).status).toBe(200);
  return id;
}

/** What the run's two writes created, from its trace. */
async function writesOf(id: string) {
  const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body as {
    steps: Array<{ toolCalls: Array<{ name: string; outcome: string; observation: string }> }>;
  };
  const result = (tool: string) =>
    JSON.parse(trace.steps.flatMap((s) => s.toolCalls).find((c) => c.name === tool && c.outcome === 'ok')?.observation ?? 'null');
  return { ticketId: result('create_ticket').ticketId as string, refundId: result('submit_refund').refundId as string };
}

const undosOf = async (ids: { ticketId: string; refundId: string }) =>
  (await demo.undoLog(TENANT)).filter((u) => u.id === ids.ticketId || u.id === ids.refundId).map((u) => `${u.kind} ${u.id}`);

describe('saga compensation through the fleet', () => {
  it("'ask' parks on one approval of the plan; approved, the writes are undone in reverse order, once each", async () => {
    const id = await cancelledAfterTwoWrites();
    const ids = await writesOf(id);
    const parked = (await fleet.waitForRun(id, (r) => (r as RunBody).compensation?.status === 'pending')) as RunBody;
    expect(parked.status).toBe('cancelled');
    expect(parked.compensation?.steps.map((s) => [s.tool, s.status])).toEqual([
      ['submit_refund', 'pending'],
      ['create_ticket', 'pending'],
    ]);
    // Nothing is undone before the plan is approved.
    expect(await undosOf(ids)).toEqual([]);
    const planId = parked.compensation?.approvalId as string;
    const plan = (await fleet.callApprover('GET', `/v1/approvals/${planId}`, KEYS.approver.key)).body;
    expect(plan).toMatchObject({ toolName: 'compensation', status: 'pending', requiredRole: 'approver' });
    expect(plan.arguments.undo.map((u: { tool: string }) => u.tool)).toEqual(['submit_refund', 'create_ticket']);
    // The plan needs an approver: the requesting user may not approve the undo of their own run.
    expect((await fleet.callApprover('POST', `/v1/approvals/${planId}/approve`, KEYS.user.key, {})).status).toBe(403);
    expect((await fleet.callApprover('POST', `/v1/approvals/${planId}/approve`, KEYS.approver.key, {})).status).toBe(200);

    const done = (await fleet.waitForRun(id, (r) => (r as RunBody).compensation?.status === 'done')) as RunBody;
    expect(done.compensation?.steps.map((s) => [s.tool, s.status])).toEqual([
      ['submit_refund', 'done'],
      ['create_ticket', 'done'],
    ]);
    expect(await undosOf(ids)).toEqual([`refund_reversed ${ids.refundId}`, `ticket_cancelled ${ids.ticketId}`]);
    expect((await demo.refunds(TENANT)).find((r) => r.refundId === ids.refundId)?.status).toBe('reversed');
    expect((await demo.tickets(TENANT)).find((t) => t.ticketId === ids.ticketId)?.status).toBe('cancelled');

    // In the trace's event stream and the metrics.
    const events = await client.xrange(runKeys(id).events, '-', '+');
    const types = events.map(([, f]) => JSON.parse(f[1] ?? '{}').type as string).filter((t) => t.startsWith('compensation.'));
    expect(types).toEqual([
      'compensation.started',
      'compensation.started',
      'compensation.step',
      'compensation.step',
      'compensation.finished',
    ]);
    const metrics = await Promise.all(fleet.workerMetricsPorts.map((p) => fetch(`http://127.0.0.1:${p}/metrics`).then((r) => r.text())));
    const count = (tool: string) =>
      metrics
        .flatMap((m) => m.split('\n'))
        .filter((l) => l.startsWith('rein_compensations_total{') && l.includes(`tool="${tool}"`) && l.includes('outcome="ok"'))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    expect(count('submit_refund')).toBeGreaterThanOrEqual(1);
    expect(count('create_ticket')).toBeGreaterThanOrEqual(1);

    // Undone once: asking again is a conflict, not a second undo.
    expect((await fleet.callApi('POST', `/v1/runs/${id}/compensate`, KEYS.approver.key)).status).toBe(409);
  });

  it('a compensation that fails stops the saga and leaves compensation_failed for a person', async () => {
    const id = await cancelledAfterTwoWrites();
    const ids = await writesOf(id);
    const parked = (await fleet.waitForRun(id, (r) => (r as RunBody).compensation?.status === 'pending')) as RunBody;
    await demo.markPaidOut(TENANT, ids.refundId); // finance was faster: the refund cannot be reversed
    const planId = parked.compensation?.approvalId as string;
    expect((await fleet.callApprover('POST', `/v1/approvals/${planId}/approve`, KEYS.approver.key, {})).status).toBe(200);

    const failed = (await fleet.waitForRun(id, (r) => (r as RunBody).compensation?.status === 'failed')) as RunBody;
    expect(failed.compensation?.code).toBe('compensation_failed');
    expect(failed.compensation?.steps.map((s) => [s.tool, s.status])).toEqual([
      ['submit_refund', 'failed'],
      ['create_ticket', 'pending'],
    ]);
    expect(failed.compensation?.steps[0]?.observation).toContain('refund_paid_out');
    // The ticket is left alone: an undo that did not happen stops the ones before it.
    expect(await undosOf(ids)).toEqual([]);
  });

  it('an approver undoes a finished run on request; a user may not', async () => {
    const { body } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: MAKE_GOOD });
    const id = body.id as string;
    await approveNext(id, 'create_ticket', KEYS.user.key);
    await approveNext(id, 'submit_refund', KEYS.user.key);
    await approveNext(id, 'send_email', KEYS.approver.key);
    const finished = (await fleet.waitForRun(id, (r) => r.status === 'succeeded')) as RunBody;
    expect(finished.compensation).toBeUndefined(); // a succeeded run is not undone by itself
    const ids = await writesOf(id);

    expect((await fleet.callApi('POST', `/v1/runs/${id}/compensate`, KEYS.user.key)).status).toBe(403);
    const asked = await fleet.callApprover('POST', `/v1/runs/${id}/compensate`, KEYS.approver.key);
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({ status: 'running', trigger: 'request', requestedBy: KEYS.approver.userId });
    await fleet.waitForRun(id, (r) => (r as RunBody).compensation?.status === 'done');
    expect(await undosOf(ids)).toEqual([`refund_reversed ${ids.refundId}`, `ticket_cancelled ${ids.ticketId}`]);
  });

  it('a worker killed mid-compensation: another one finishes it, each undo exactly once', async () => {
    const id = await cancelledAfterTwoWrites();
    const ids = await writesOf(id);
    const parked = (await fleet.waitForRun(id, (r) => (r as RunBody).compensation?.status === 'pending')) as RunBody;
    const refundUndo = parked.compensation?.steps[0] as CompensationView['steps'][number];
    await client.hset(FAULTS_KEY, 'compensateHangUntil', String(Date.now() + 120_000));
    try {
      const planId = parked.compensation?.approvalId as string;
      expect((await fleet.callApprover('POST', `/v1/approvals/${planId}/approve`, KEYS.approver.key, {})).status).toBe(200);
      // The refund's undo has started (its intent is in the ledger) and hangs: kill every worker.
      const key = compensationKey(id, refundUndo.step, refundUndo.toolCallId);
      const end = Date.now() + 45_000;
      while (!(await client.hget(runKeys(id).effects, key)) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(JSON.parse((await client.hget(runKeys(id).effects, key)) ?? '{}').state).toBe('intent');
      for (const w of fleet.workers) w.kill('SIGKILL');
    } finally {
      await client.hdel(FAULTS_KEY, 'compensateHangUntil');
    }
    await fleet.startWorker();
    const done = (await fleet.waitForRun(id, (r) => (r as RunBody).compensation?.status === 'done', 60_000)) as RunBody;
    expect(done.compensation?.steps.map((s) => s.status)).toEqual(['done', 'done']);
    expect(await undosOf(ids)).toEqual([`refund_reversed ${ids.refundId}`, `ticket_cancelled ${ids.ticketId}`]);
  });
});
