import type { Principal } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, pageIndexes } from '../src/adapters/redis/index-pager.js';
import { ForbiddenError } from '../src/shared/errors.js';
import { createFakeModel, toolCall } from '../src/testing/fake-model.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();
const CAROL: Principal = { tenantId: 'acme', userId: 'carol', roles: ['user'] };

/** Every page of a listing, following nextCursor to the end. */
async function allPages<T>(page: (cursor?: string) => Promise<{ nextCursor?: string } & T>, pick: (p: T) => string[]) {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const p = await page(cursor);
    ids.push(...pick(p));
    cursor = p.nextCursor;
    pages++;
  } while (cursor);
  return { ids, pages };
}

describe('run listing', () => {
  it('pages through every run exactly once, newest first, even when runs share a millisecond', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const t = use(createFakeModel([{ content: 'done' }]), { now: () => clock });
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      if (i % 3 === 0) clock += 1000; // runs 1-3, 4-6 share a timestamp
      made.push((await t.runs.submit(USER, { input: `q${i}` })).run.id);
    }
    const { ids, pages } = await allPages(
      (cursor) => t.runs.list(USER, { limit: 2, ...(cursor ? { cursor } : {}) }),
      (p) => p.runs.map((r) => r.id),
    );
    expect(pages).toBe(4);
    expect(new Set(ids).size).toBe(7);
    expect(ids.sort()).toEqual([...made].sort());
  });

  it('filters by status, agent and time, and shows plain users only their own runs', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const t = use(createFakeModel([{ content: 'done' }]), { now: () => clock });
    const alice1 = (await t.runs.submit(USER, { input: 'a1' })).run.id;
    await t.drain(); // alice1 succeeds
    clock += 60_000;
    const alice2 = (await t.runs.submit(USER, { input: 'a2' })).run.id;
    const carol1 = (await t.runs.submit(CAROL, { input: 'c1' })).run.id;
    const ids = async (who: Principal, q: Record<string, unknown>) =>
      (await t.runs.list(who, { limit: 50, ...q })).runs.map((r) => r.id).sort();

    expect(await ids(USER, {})).toEqual([alice1, alice2].sort());
    expect(await ids(USER, { status: 'succeeded' })).toEqual([alice1]);
    expect(await ids(USER, { status: 'queued' })).toEqual([alice2]);
    expect(await ids(APPROVER, {})).toEqual([alice1, alice2, carol1].sort());
    expect(await ids(APPROVER, { userId: 'carol' })).toEqual([carol1]);
    expect(await ids(APPROVER, { status: 'queued', userId: 'alice' })).toEqual([alice2]);
    expect(await ids(APPROVER, { agent: 'order-assistant', status: 'succeeded' })).toEqual([alice1]);
    expect(await ids(APPROVER, { agent: 'no-such-agent' })).toEqual([]);
    const minute = Date.parse('2026-01-01T00:00:30Z');
    expect(await ids(APPROVER, { createdAfter: minute })).toEqual([alice2, carol1].sort());
    expect(await ids(APPROVER, { createdBefore: minute })).toEqual([alice1]);
    await expect(t.runs.list(USER, { limit: 50, userId: 'carol' })).rejects.toBeInstanceOf(ForbiddenError);
    expect(await ids({ ...USER, tenantId: 'other' }, {})).toEqual([]);
  });

  it('moves a run between status indexes as it changes status', async () => {
    const t = use(createFakeModel([{ content: 'done' }]));
    const id = (await t.runs.submit(USER, { input: 'q' })).run.id;
    await t.runs.cancel(USER, id);
    expect((await t.runs.list(USER, { limit: 10, status: 'queued' })).runs).toEqual([]);
    expect((await t.runs.list(USER, { limit: 10, status: 'cancelled' })).runs.map((r) => r.id)).toEqual([id]);
  });

  it('refuses a cursor it did not hand out', () => {
    expect(() => decodeCursor('not-a-cursor')).toThrow(/cursor/);
    expect(decodeCursor(encodeCursor({ at: 5, id: 'x' }))).toEqual({ at: 5, id: 'x' });
  });

  it('intersects indexes without reading the records', async () => {
    const t = use(createFakeModel([{ content: 'done' }]));
    await t.redis.zadd('a', 1, 'x', 2, 'y', 3, 'z', 4, 'w');
    await t.redis.zadd('b', 2, 'y', 4, 'w', 9, 'only-b');
    const first = await pageIndexes(t.redis, ['a', 'b'], { limit: 1 });
    expect(first.ids).toEqual(['w']);
    const second = await pageIndexes(t.redis, ['a', 'b'], { limit: 1, ...(first.next ? { cursor: first.next } : {}) });
    expect(second).toEqual({ ids: ['y'] });
  });
});

describe('approval listing', () => {
  const parkingModel = () =>
    createFakeModel([
      // Every run asks for a gated write first, then answers.
      (req) =>
        req.messages[req.messages.length - 1]?.role === 'user'
          ? { toolCalls: [toolCall('c1', 'update_order_note', { orderNo: '2024001', note: 'call back' })] }
          : { content: 'done' },
    ]);

  it('lists by status from the index and pages with a cursor; plain users see only their own', async () => {
    const t = use(parkingModel());
    for (const who of [USER, USER, CAROL]) await t.runs.submit(who, { input: 'note 2024001' });
    await t.drain();
    const pending = await allPages(
      (cursor) => t.approvals.list(APPROVER, { status: 'pending', limit: 2, ...(cursor ? { cursor } : {}) }),
      (p) => p.approvals.map((a) => a.id),
    );
    expect(pending.ids).toHaveLength(3);
    expect(pending.pages).toBe(2);
    const first = pending.ids[0] ?? '';
    await t.approvals.decide(APPROVER, first, { kind: 'reject', reason: 'no' });
    expect((await t.approvals.list(APPROVER, { status: 'pending', limit: 10 })).approvals.map((a) => a.id)).not.toContain(first);
    expect((await t.approvals.list(APPROVER, { status: 'rejected', limit: 10 })).approvals.map((a) => a.id)).toEqual([first]);
    const mine = (await t.approvals.list(CAROL, { limit: 10 })).approvals;
    expect(mine.map((a) => a.requestedBy)).toEqual(['carol']);
  });
});
