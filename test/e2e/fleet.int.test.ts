import type { RedisClient } from '@rein/core';
import { DemoStore } from '@rein/example-order-assistant';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet as startFleetOn } from '../support/fleet.js';
import { startTopology, type Topology, type TopologyKind } from '../support/topology.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

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
    const user = fleet.client(KEYS.user.key);
    const approver = fleet.client(KEYS.approver.key);
    const other = fleet.client(KEYS.other.key);
    const { id } = await user.runs.create({ input: LATE_ORDER });

    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval');
    expect(parked.pendingApprovals).toMatchObject([
      { toolName: 'create_ticket', risk: 'high', requestedBy: 'zhangsan', status: 'pending' },
    ]);
    const tickets = () => new DemoStore(client).tickets(KEYS.user.tenantId, '2024001');
    expect(await tickets()).toEqual([]); // nothing happened before approval

    // Another tenant cannot see or decide it.
    const approvalId = parked.pendingApprovals[0]?.id ?? '';
    await expect(other.approvals.approve(approvalId)).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(other.runs.get(id)).rejects.toMatchObject({ status: 404, code: 'not_found' });

    const listed = await approver.approvals.list({ status: 'pending' });
    expect(listed.approvals.map((a) => a.id)).toEqual([approvalId]);
    expect(await approver.approvals.approve(approvalId, { comment: 'ok' })).toMatchObject({ status: 'approved', decidedBy: 'lisi' });
    await expect(approver.approvals.reject(approvalId, 'late')).rejects.toMatchObject({ status: 409, code: 'approval_decided' });

    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded');
    const created = await tickets();
    expect(created).toHaveLength(1);
    expect(done.finalAnswer).toContain(created[0]?.ticketId);
    expect(done.finalAnswer).toContain('超时发货处理规范');

    const trace = await user.runs.trace(id);
    expect(trace.steps.map((s) => s.toolCalls.map((c) => c.name))).toEqual([['query_order'], ['search_policy'], ['create_ticket'], []]);
    expect(trace.steps[2]?.toolCalls[0]).toMatchObject({
      outcome: 'ok',
      approval: { status: 'approved', decidedBy: 'lisi', comment: 'ok' },
    });
    expect(trace.totalTokens).toBe(trace.steps.reduce((sum, s) => sum + s.usage.totalTokens, 0));
  });

  it('loses no run when the only worker is SIGKILLed mid-step; another worker finishes it', async () => {
    // One worker, and a slow model, so the kill lands while that worker holds a step.
    fleet = await startFleet({ workers: 1, modelLatencyMs: 1500 });
    const inputs = [LATE_ORDER, '支持 7 天无理由退货吗？', '查订单 A12345 状态，按政策说能否退', 'Do you support 7-day no-reason returns?'];
    const ids: string[] = [];
    for (const input of inputs) ids.push((await fleet.client().runs.create({ input })).id);
    await fleet.waitForRun(ids[0] as string, (r) => r.status === 'running');

    const victim = fleet.workers[0];
    victim?.kill('SIGKILL');
    await new Promise((resolve) => victim?.once('exit', resolve));
    await fleet.startWorker();

    const parked = await fleet.waitForRun(ids[0] as string, (r) => r.status === 'pending_approval');
    expect((await fleet.client().approvals.approve(parked.pendingApprovals[0]?.id ?? '')).status).toBe('approved');

    for (const id of ids) {
      const run = await fleet.waitForRun(id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status));
      expect(run.status).toBe('succeeded');
      const trace = await fleet.client().runs.trace(id);
      // Tokens counted once per step even though a step was interrupted and replayed.
      expect(trace.totalTokens).toBe(trace.steps.reduce((sum, s) => sum + s.usage.totalTokens, 0));
    }
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001')).toHaveLength(1);
  });

  it('expires an approval nobody decides, through the delayed job alone, and the run goes on', async () => {
    fleet = await startFleet({ env: { APPROVAL_TTL_MS: '1500' } });
    const run = await fleet.client().runs.create({ input: LATE_ORDER });
    // No request arrives after parking: only the worker's expiry job can move the run on.
    const done = await fleet.waitForRun(run.id, (r) => r.status === 'succeeded');
    expect(done.finalAnswer).toContain('nobody decided before the approval expired');
    const { approvals } = await fleet.client(KEYS.approver.key).approvals.list();
    expect(approvals.map((a) => a.status)).toEqual(['expired']);
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId)).toEqual([]);
  });

  it('resumes exactly once when the worker dies between the decision and the resume', async () => {
    fleet = await startFleet({ workers: 1 });
    const body = await fleet.client().runs.create({ input: LATE_ORDER });
    const parked = await fleet.waitForRun(body.id, (r) => r.status === 'pending_approval');
    const victim = fleet.workers[0];
    victim?.kill('SIGKILL');
    await new Promise((resolve) => victim?.once('exit', resolve));

    const approvalId = parked.pendingApprovals[0]?.id ?? '';
    expect((await fleet.client(KEYS.approver.key).approvals.approve(approvalId)).status).toBe('approved');
    expect((await fleet.client().runs.get(body.id)).status).toBe('pending_approval'); // nobody to resume it yet

    await fleet.startWorker();
    await fleet.startWorker();
    await fleet.waitForRun(body.id, (r) => r.status === 'succeeded');
    expect(await new DemoStore(client).tickets(KEYS.user.tenantId, '2024001')).toHaveLength(1);
  });
});
