import type { RunRecord } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, harnessPerTest } from './harness.js';

const use = harnessPerTest();

/**
 * The applier's change hook (A2A push notifications read a run's configs in it): called when a
 * commit changes a live run's status or approvals, never for a step that only goes on, so an
 * ordinary step costs it nothing.
 */
describe('the change hook', () => {
  it('is called at a status change and at a decision, not at a step that only continues', async () => {
    const changed: string[] = [];
    const onChanged = async (run: RunRecord) => void changed.push(run.status);
    const reads = createFakeModel([
      { toolCalls: [toolCall('q1', 'query_order', { orderNo: 'A12345' })] },
      { toolCalls: [toolCall('q2', 'query_order', { orderNo: 'A12346' })] },
      { toolCalls: [toolCall('s1', 'search_policy', { query: 'late' })] },
      { content: 'done' },
    ]);
    const t = use(reads, { onChanged });
    const id = await t.submit('where are my orders?');
    await t.drain();
    expect((await t.store.require(id)).status).toBe('succeeded');
    // queued → running once; three steps that went on, and the finish, call nothing.
    expect(changed).toEqual(['running']);
  });

  it('is called when a run parks and when its approval is decided', async () => {
    const changed: string[] = [];
    const onChanged = async (run: RunRecord) => void changed.push(run.status);
    const write = createFakeModel([
      { toolCalls: [toolCall('w1', 'submit_refund', { orderNo: '2024001', amount: 80, reason: 'late' })] },
      { content: 'done' },
    ]);
    const t = use(write, { onChanged, approvalTtlMs: 3_600_000 });
    const id = await t.submit('refund 80');
    await t.drain();
    const parked = await t.store.require(id);
    expect(changed).toEqual(['running', 'pending_approval']);
    await t.approvals.decide(APPROVER, parked.pendingApprovals[0] as string, { kind: 'approve' });
    await t.drain();
    expect((await t.store.require(id)).status).toBe('succeeded');
    // The decision (its approvals changed, the status not yet), then the resume.
    expect(changed).toEqual(['running', 'pending_approval', 'pending_approval', 'running']);
  });
});
