import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const fleet = fleetPerFile();

type RunBody = {
  id: string;
  status: string;
  finalAnswer?: string;
  parentRunId?: string;
  rootRunId?: string;
  children?: Array<{ id: string; agent: string; status: string }>;
  usage: { totalTokens: number };
  treeUsage?: { totalTokens: number };
  pendingApprovals: Array<{ id: string; toolName: string; parentRunId?: string; rootRunId?: string }>;
};

describe('the order desk asks its refunds agent (a child run) over the real fleet', () => {
  it('waits while the child waits for its approval, resumes with its answer, and shows the tree', async () => {
    const f = fleet();
    const submitted = await f.callApi('POST', '/v1/runs', KEYS.user.key, {
      agent: 'order-desk',
      input: 'Ask the refunds agent about late order 2024001',
    });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    const waiting = (await f.waitForRun(id, (r) => (r as RunBody).children?.[0]?.status === 'pending_approval')) as RunBody;
    expect(waiting.status).toBe('waiting');
    const childId = waiting.children?.[0]?.id as string;
    expect(waiting.children?.[0]?.agent).toBe('refunds');
    const child = (await f.callApi('GET', `/v1/runs/${childId}`)).body as RunBody;
    expect(child).toMatchObject({ parentRunId: id, rootRunId: id, status: 'pending_approval' });
    const approval = child.pendingApprovals[0];
    expect(approval).toMatchObject({ toolName: 'submit_refund', parentRunId: id, rootRunId: id });
    // Another tenant sees neither run.
    expect((await f.callApi('GET', `/v1/runs/${childId}`, KEYS.other.key)).status).toBe(404);

    expect((await f.callApprover('POST', `/v1/approvals/${approval?.id}/approve`, KEYS.approver.key, {})).status).toBe(200);
    const done = (await f.waitForRun(id, (r) => r.status === 'succeeded')) as RunBody;
    expect(done.finalAnswer).toMatch(/The refunds agent reports: Refunded .* on order 2024001/);
    expect(done.children).toEqual([{ id: childId, agent: 'refunds', status: 'succeeded' }]);
    expect(done.treeUsage?.totalTokens).toBeGreaterThan(done.usage.totalTokens);
    const trace = (await f.callApi('GET', `/v1/runs/${id}/trace`)).body as {
      steps: Array<{ agent?: string; toolCalls: Array<{ name: string; childRunId?: string }> }>;
    };
    expect(trace.steps[0]).toMatchObject({ agent: 'order-desk', toolCalls: [{ name: 'call_refunds', childRunId: childId }] });
  });

  it('cancelling the parent cancels its parked child', async () => {
    const f = fleet();
    const { body } = await f.callApi('POST', '/v1/runs', KEYS.user.key, {
      agent: 'order-desk',
      input: 'Ask the refunds agent about late order 2024002',
    });
    const waiting = (await f.waitForRun(body.id, (r) => (r as RunBody).children?.[0]?.status === 'pending_approval')) as RunBody;
    const childId = waiting.children?.[0]?.id as string;
    expect((await f.callApi('POST', `/v1/runs/${body.id}/cancel`)).status).toBe(200);
    const child = await f.waitForRun(childId, (r) => r.status === 'cancelled');
    expect(child.pendingApprovals).toEqual([]);
  });
});
