import type { RedisClient } from '@rein/core';
import { DemoStore } from '@rein/example-order-assistant';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet as startFleetOn } from '../support/fleet.js';
import { startTopology, type Topology, type TopologyKind } from '../support/topology.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

type Step = { toolCalls: Array<{ name: string; outcome: string }>; usage: { totalTokens: number } };

/**
 * The same flows on one Redis and on a 3-master Redis Cluster; the cluster fleet also
 * splits the step queue into 3 shards, so a run's steps cross nodes and shards.
 */
const TOPOLOGIES: Array<{ kind: TopologyKind; env: Record<string, string> }> = [
  { kind: 'single', env: {} },
  { kind: 'cluster', env: { REIN_QUEUE_SHARDS: '3' } },
];

describe.each(TOPOLOGIES)('the fleet, as processes, on $kind Redis', ({ kind, env: topologyEnv }) => {
  let topology: Topology;
  let client: RedisClient;
  let fleet: Fleet | undefined;
  beforeAll(async () => {
    topology = await startTopology(kind);
    client = topology.client;
  });
  afterEach(async () => {
    await fleet?.stop();
    fleet = undefined;
    await topology.flush();
  });
  afterAll(async () => {
    await topology.stop();
  });
  const startFleet = (opts: Omit<Parameters<typeof startFleetOn>[0], 'redisUrl'> = {}) =>
    startFleetOn({ ...topology.fleet, ...opts, env: { ...topologyEnv, ...opts.env } });

  it('runs the late-order complaint from submit through approval to succeeded', async () => {
    fleet = await startFleet();
    const submitted = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: LATE_ORDER });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;

    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval');
    expect(parked.pendingApprovals).toMatchObject([
      { toolName: 'create_ticket', risk: 'high', requestedBy: 'zhangsan', status: 'pending' },
    ]);
    const tickets = () => new DemoStore(client).tickets(KEYS.user.tenantId, '2024001');
    expect(await tickets()).toEqual([]); // nothing happened before approval

    // Another tenant cannot see or decide it.
    const approvalId = (parked.pendingApprovals as Array<{ id: string }>)[0]?.id;
    expect((await fleet.callApprover('POST', `/v1/approvals/${approvalId}/approve`, KEYS.other.key, {})).status).toBe(404);
    expect((await fleet.callApi('GET', `/v1/runs/${id}`, KEYS.other.key)).status).toBe(404);

    const listed = await fleet.callApprover('GET', '/v1/approvals?status=pending', KEYS.approver.key);
    expect(listed.body.approvals.map((a: { id: string }) => a.id)).toEqual([approvalId]);
    const decided = await fleet.callApprover('POST', `/v1/approvals/${approvalId}/approve`, KEYS.approver.key, { comment: 'ok' });
    expect(decided).toMatchObject({ status: 200, body: { status: 'approved', decidedBy: 'lisi' } });
    expect((await fleet.callApprover('POST', `/v1/approvals/${approvalId}/reject`, KEYS.approver.key, { reason: 'late' })).status).toBe(
      409,
    );

    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded');
    const created = await tickets();
    expect(created).toHaveLength(1);
    expect(done.finalAnswer).toContain(created[0]?.ticketId);
    expect(done.finalAnswer).toContain('超时发货处理规范');

    const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body;
    expect(trace.steps.map((s: Step) => s.toolCalls.map((c) => c.name))).toEqual([
      ['query_order'],
      ['search_policy'],
      ['create_ticket'],
      [],
    ]);
    expect(trace.steps[2].toolCalls[0]).toMatchObject({
      outcome: 'ok',
      approval: { status: 'approved', decidedBy: 'lisi', comment: 'ok' },
    });
    expect(trace.totalTokens).toBe(trace.steps.reduce((sum: number, s: Step) => sum + s.usage.totalTokens, 0));
  });

  it('loses no run when the only worker is SIGKILLed mid-step; another worker finishes it', async () => {
    // One worker, and a slow model, so the kill lands while that worker holds a step.
    fleet = await startFleet({ workers: 1, modelLatencyMs: 1500 });
    const inputs = [LATE_ORDER, '支持 7 天无理由退货吗？', '查订单 A12345 状态，按政策说能否退', 'Do you support 7-day no-reason returns?'];
    const ids: string[] = [];
    for (const input of inputs) ids.push((await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input })).body.id);
    await fleet.waitForRun(ids[0] as string, (r) => r.status === 'running');

    const victim = fleet.workers[0];
    victim?.kill('SIGKILL');
    await new Promise((resolve) => victim?.once('exit', resolve));
    await fleet.startWorker();

    const parked = await fleet.waitForRun(ids[0] as string, (r) => r.status === 'pending_approval');
    const approvalId = (parked.pendingApprovals as Array<{ id: string }>)[0]?.id;
    expect((await fleet.callApprover('POST', `/v1/approvals/${approvalId}/approve`, KEYS.user.key, {})).status).toBe(200);

    for (const id of ids) {
      const run = await fleet.waitForRun(id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status));
      expect(run.status).toBe('succeeded');
      const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body;
      // Tokens counted once per step even though a step was interrupted and replayed.
      expect(trace.totalTokens).toBe(trace.steps.reduce((sum: number, s: Step) => sum + s.usage.totalTokens, 0));
    }
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001')).toHaveLength(1);
  });

  it('expires an approval nobody decides, through the delayed job alone, and the run goes on', async () => {
    fleet = await startFleet({ env: { APPROVAL_TTL_MS: '1500' } });
    const { body } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: LATE_ORDER });
    // No request arrives after parking: only the worker's expiry job can move the run on.
    const done = await fleet.waitForRun(body.id, (r) => r.status === 'succeeded');
    expect(done.finalAnswer).toContain('nobody decided before the approval expired');
    const approvals = (await fleet.callApprover('GET', '/v1/approvals', KEYS.approver.key)).body.approvals;
    expect(approvals.map((a: { status: string }) => a.status)).toEqual(['expired']);
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId)).toEqual([]);
  });

  it('resumes exactly once when the worker dies between the decision and the resume', async () => {
    fleet = await startFleet({ workers: 1 });
    const { body } = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: LATE_ORDER });
    const parked = await fleet.waitForRun(body.id, (r) => r.status === 'pending_approval');
    const victim = fleet.workers[0];
    victim?.kill('SIGKILL');
    await new Promise((resolve) => victim?.once('exit', resolve));

    const approvalId = (parked.pendingApprovals as Array<{ id: string }>)[0]?.id;
    expect((await fleet.callApprover('POST', `/v1/approvals/${approvalId}/approve`, KEYS.approver.key, {})).status).toBe(200);
    expect((await fleet.callApi('GET', `/v1/runs/${body.id}`)).body.status).toBe('pending_approval'); // nobody to resume it yet

    await fleet.startWorker();
    await fleet.startWorker();
    await fleet.waitForRun(body.id, (r) => r.status === 'succeeded');
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001')).toHaveLength(1);
  });
});
