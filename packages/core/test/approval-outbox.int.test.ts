import type { ApprovalFeedEvent } from '@rein/contract';
import { Queue } from 'bullmq';
import { describe, expect, it, vi } from 'vitest';
import { ApprovalFeed } from '../src/adapters/redis/approval-feed.js';
import { reap } from '../src/features/housekeeping/reaper.js';
import { APPROVAL_OUTBOX_KEY } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, type Harness, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();
const STALE_MS = 60_000;

/** A model that asks for one approved write, then answers. */
const model = () =>
  createFakeModel([
    { toolCalls: [toolCall('w1', 'submit_refund', { orderNo: '2024001', amount: 80, reason: 'late' })] },
    { content: 'done' },
  ]);

/** One reaper pass, a staleness later, whose feed hands events to `delivered` (the webhook dispatcher's place). */
async function reapLater(t: Harness, delivered: ApprovalFeedEvent[]) {
  const feed = new ApprovalFeed(t.redis, async (_tenant, e) => {
    delivered.push(e);
    return true;
  });
  const queue = new Queue('outbox-test', { connection: t.redis });
  try {
    return await reap({
      store: t.store,
      queueOf: () => queue,
      enqueue: t.enqueue,
      approvals: t.approvals,
      feed,
      applier: t.applier,
      metrics: t.metrics,
      logger: t.logger,
      staleMs: STALE_MS,
      now: () => Date.now() + 2 * STALE_MS,
    });
  } finally {
    await queue.close();
  }
}

const crashOnce = (t: Harness) => vi.spyOn(t.feed, 'publish').mockRejectedValueOnce(new Error('the process died here'));

describe('approval events are at least once', () => {
  it('an approval.requested lost to a crash between the commit and its delivery is delivered by the reaper', async () => {
    const t = use(model(), { approvalTtlMs: 3_600_000 });
    crashOnce(t);
    const id = await t.submit('refund 80');
    await t.drain().catch(() => {}); // the step's commit landed; the process "died" before publishing
    const run = await t.store.require(id);
    expect(run.status).toBe('pending_approval');
    expect(await t.redis.zcard(APPROVAL_OUTBOX_KEY)).toBe(1);

    const delivered: ApprovalFeedEvent[] = [];
    await reapLater(t, delivered);
    expect(delivered).toEqual([
      { type: 'approval.requested', approvalId: run.pendingApprovals[0], runId: id, status: 'pending', at: expect.any(String) },
    ]);
    expect(await t.redis.zcard(APPROVAL_OUTBOX_KEY)).toBe(0);
    // Published once: the next pass has nothing left to do.
    await reapLater(t, delivered);
    expect(delivered).toHaveLength(1);
  });

  it('an approval.decided lost to a crash after the decision commit is delivered by the reaper', async () => {
    const t = use(model(), { approvalTtlMs: 3_600_000 });
    const id = await t.submit('refund 80');
    await t.drain();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 10 })).approvals;
    crashOnce(t);
    await expect(t.approvals.decide(APPROVER, approval?.id as string, { kind: 'approve' })).rejects.toThrow('the process died here');
    expect((await t.store.approvals(id))[0]?.status).toBe('approved');

    const delivered: ApprovalFeedEvent[] = [];
    await reapLater(t, delivered);
    expect(delivered).toMatchObject([{ type: 'approval.decided', approvalId: approval?.id, status: 'approved' }]);
  });

  it('publishes nothing for an event whose commit never landed, and drops it', async () => {
    const t = use(model(), { approvalTtlMs: 3_600_000 });
    const id = await t.submit('refund 80');
    await t.drain();
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 10 })).approvals;
    // Staged as if a rejection were about to commit, which then lost its compare-and-set.
    await t.feed.stage(USER.tenantId, [
      { type: 'approval.decided', approvalId: approval?.id as string, runId: id, status: 'rejected', at: new Date().toISOString() },
    ]);
    const delivered: ApprovalFeedEvent[] = [];
    await reapLater(t, delivered);
    expect(delivered).toEqual([]);
    expect(await t.redis.zcard(APPROVAL_OUTBOX_KEY)).toBe(0);
  });
});
