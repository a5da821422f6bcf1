import { randomUUID } from 'node:crypto';
import type { Compensation, RunRecord } from '@rein/contract';
import { NotFoundError, type RunRepository, StaleStepError, type TurnJournal } from '@rein/core/internal';
import { beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, type BackendKind, useBackend } from './backends.js';
import { approval, event, iso, runRecord, stepRecord, T0, TTL_SECONDS } from './fixtures.js';

/**
 * The RunRepository port's behaviours (with the TurnJournal reads a commit is checked by),
 * written once and run on one Redis, on a 3-master cluster (a run's keys share its slot,
 * its tenant's indexes another, so every multi-slot read and write is exercised as in
 * production) and on the in-memory fake, which must behave the same.
 */
describe.each<BackendKind>(BACKENDS)('the run repository on %s', (kind) => {
  const backend = useBackend(kind, TTL_SECONDS);
  let store: RunRepository & TurnJournal;
  beforeEach(() => {
    store = backend().runs;
  });

  /** A created run moved to `running` by one commit, as the first step does. */
  async function running(over: Partial<RunRecord> = {}): Promise<RunRecord> {
    const run = runRecord(over);
    expect(await store.create(run, { role: 'user', content: run.input }, event(run, 'run.queued'))).toBe(true);
    const next = await store.compareAndSet({ from: run, to: { ...run, status: 'running' } });
    await store.afterCommit(run, next, []);
    return next;
  }

  it('creates a run once: a second create of the same id changes nothing', async () => {
    const run = runRecord();
    expect(await store.create(run, { role: 'user', content: 'hi' }, event(run, 'run.queued'))).toBe(true);
    expect(await store.create({ ...run, input: 'other' }, { role: 'user', content: 'other' }, event(run, 'run.queued'))).toBe(false);
    expect(await store.get(run.id)).toEqual(run);
    expect(await store.messages(run.id)).toEqual([{ role: 'user', content: 'hi' }]);
    expect((await store.readEvents(run.id, '0-0')).map((e) => e.event.type)).toEqual(['run.queued']);
  });

  it('commits when the run is still at the version read: the step, messages and events land with version + 1', async () => {
    const run = await running();
    const next = await store.compareAndSet({
      from: run,
      to: { ...run, step: 1 },
      step: stepRecord(0),
      messages: [{ role: 'assistant', content: 'thinking' }],
      events: [event(run, 'step.finished')],
    });
    expect(next.version).toBe(run.version + 1);
    expect(await store.get(run.id)).toEqual(next);
    expect((await store.steps(run.id)).map((s) => s.thought)).toEqual(['step 0']);
    expect((await store.messages(run.id)).at(-1)).toEqual({ role: 'assistant', content: 'thinking' });
    const read = await store.readStep(run.id, 0);
    expect(read.run).toEqual(next);
    expect(read.messages).toHaveLength(2);
  });

  it("refuses, at a step's read, a run document of a schema version this release does not know", async () => {
    const run = await running();
    // A document of another version (a newer release's, say) is parsed, not trusted as this release's.
    await store.compareAndSet({ from: run, to: { ...run, schemaVersion: 2 as RunRecord['schemaVersion'] } });
    await expect(store.readStep(run.id, 0)).rejects.toThrow(/schemaVersion/);
  });

  it('lets exactly one of two commits from the same version win; the loser writes nothing', async () => {
    const run = await running();
    const results = await Promise.allSettled(
      ['a', 'b'].map((who) =>
        store.compareAndSet({ from: run, to: { ...run, step: 1, finalAnswer: who }, messages: [{ role: 'assistant', content: who }] }),
      ),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(StaleStepError);
    const winner = (won[0] as PromiseFulfilledResult<RunRecord>).value;
    expect(await store.get(run.id)).toEqual(winner);
    expect((await store.messages(run.id)).filter((m) => m.role === 'assistant')).toEqual([
      { role: 'assistant', content: winner.finalAnswer },
    ]);
  });

  it('refuses a stale step (a commit from an older version) and keeps the newer state', async () => {
    const run = await running();
    const newer = await store.compareAndSet({ from: run, to: { ...run, step: 1 }, step: stepRecord(0) });
    await expect(store.compareAndSet({ from: run, to: { ...run, status: 'failed', reason: 'internal_error' } })).rejects.toBeInstanceOf(
      StaleStepError,
    );
    expect(await store.get(run.id)).toEqual(newer);
    expect(await store.steps(run.id)).toHaveLength(1);
    await expect(store.compareAndSet({ from: runRecord(), to: runRecord() })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('keeps the indexes: a run leaves its old status index, and a finished one leaves the deadline and active indexes', async () => {
    const run = await running();
    const byStatus = async (status: RunRecord['status']) => (await store.list('acme', { status }, { limit: 10 })).runs.map((r) => r.id);
    expect(await byStatus('running')).toEqual([run.id]);
    expect(await byStatus('queued')).toEqual([]);
    expect((await store.activeRuns()).map((a) => a.runId)).toEqual([run.id]);
    const finished = await store.compareAndSet({ from: run, to: { ...run, status: 'succeeded', finalAnswer: 'done' } });
    await store.afterCommit(run, finished, []);
    expect(await byStatus('running')).toEqual([]);
    expect(await byStatus('succeeded')).toEqual([run.id]);
    expect(await store.overdue(T0 + 10 * 300_000)).toEqual([]);
    expect(await store.activeRuns()).toEqual([]);
  });

  it('stores approvals with their run and indexes them by tenant and status', async () => {
    const run = await running();
    const asked = approval(run);
    const parked = await store.compareAndSet({
      from: run,
      to: { ...run, status: 'pending_approval', pendingApprovals: [asked.id], parkedAt: asked.createdAt },
      approvals: [asked],
    });
    await store.afterCommit(run, parked, [asked]);
    expect(await store.approvals(run.id)).toEqual([asked]);
    expect((await store.readStep(run.id, run.step)).approvals).toEqual([asked]);
    expect((await store.pageApprovals('acme', 'pending', { limit: 10 })).ids).toEqual([asked.id]);
    const decided = { ...asked, status: 'approved' as const, decidedBy: 'bob', decidedAt: iso(T0 + 3000) };
    const resumed = await store.compareAndSet({
      from: parked,
      to: { ...parked, status: 'running', pendingApprovals: [] },
      approvals: [decided],
    });
    await store.afterCommit(parked, resumed, [decided]);
    expect((await store.pageApprovals('acme', 'pending', { limit: 10 })).ids).toEqual([]);
    expect((await store.pageApprovals('acme', 'approved', { limit: 10 })).ids).toEqual([asked.id]);
    expect(await store.approvalsById([asked.id, `${randomUUID()}.0.0`])).toEqual([decided, null]);
  });

  it("lists a tenant's runs newest first, a page at a time, by agent and user, never another tenant's", async () => {
    const made: RunRecord[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(await running({ createdAt: iso(T0 + i * 1000), agent: i % 2 ? 'odd' : 'even', userId: i < 3 ? 'alice' : 'carol' }));
    }
    await running({ tenantId: 'other' });
    const first = await store.list('acme', {}, { limit: 3 });
    expect(first.runs.map((r) => r.id)).toEqual(
      made
        .slice(2)
        .reverse()
        .map((r) => r.id),
    );
    const second = await store.list('acme', {}, { limit: 3, ...(first.next ? { cursor: first.next } : {}) });
    expect(second.runs.map((r) => r.id)).toEqual(
      made
        .slice(0, 2)
        .reverse()
        .map((r) => r.id),
    );
    expect(second.next).toBeUndefined();
    expect((await store.list('acme', { agent: 'odd' }, { limit: 10 })).runs.map((r) => r.id)).toEqual([made[3]?.id, made[1]?.id]);
    expect((await store.list('acme', { userId: 'carol', agent: 'even' }, { limit: 10 })).runs.map((r) => r.id)).toEqual([made[4]?.id]);
    expect(await store.getMany([made[0]?.id as string, randomUUID()])).toEqual([made[0], null]);
  });
  it("keeps live-only events beside the committed ones, reads them after an id, and copies a sub-agent's to its ancestors", async () => {
    const run = await running();
    await store.appendEvent(event(run, 'tool.called'));
    const all = await store.readEvents(run.id, '0-0');
    expect(all.map((e) => e.event.type)).toEqual(['run.queued', 'tool.called']);
    expect((await store.readEvents(run.id, all[0]?.id as string)).map((e) => e.event.type)).toEqual(['tool.called']);
    const gone = runRecord();
    await store.appendEvent(event(gone, 'step.started'), true);
    expect(await store.readEvents(gone.id, '0-0')).toEqual([]);
    const child = runRecord({ parentRunId: run.id, ancestors: [run.id] });
    await store.mirrorEvents([run.id], [event(child, 'step.finished')]);
    expect((await store.readEvents(run.id, all[1]?.id as string)).map((e) => e.event.runId)).toEqual([child.id]);
  });

  it('says why a step is held back beside the run, and the step read sees it', async () => {
    const run = await running();
    await store.markWaiting(run.id, 'model_unavailable');
    expect(await store.waitingOn(run.id)).toBe('model_unavailable');
    expect((await store.readStep(run.id, 0)).waitingOn).toBe('model_unavailable');
    await store.clearWaiting(run.id);
    expect(await store.waitingOn(run.id)).toBeNull();
  });

  it('keeps a run in the deadline index while it runs, by its deadline, until it parks or is forgotten', async () => {
    const run = await running();
    expect(await store.overdue(T0 + 300_000 - 1)).toEqual([]);
    expect(await store.overdue(T0 + 300_000)).toEqual([run.id]);
    await store.forgetDeadline(run.id);
    expect(await store.overdue(T0 + 300_000)).toEqual([]);
    const other = await running();
    const asked = approval(other);
    const parked = await store.compareAndSet({
      from: other,
      to: { ...other, status: 'pending_approval', pendingApprovals: [asked.id], parkedAt: asked.createdAt },
      approvals: [asked],
    });
    await store.afterCommit(other, parked, [asked]);
    expect(await store.overdue(T0 + 300_000)).toEqual([]);
    // Parked, it is still active (the reaper watches it); forgotten, it is not.
    expect((await store.activeRuns()).map((a) => a.runId).sort()).toEqual([run.id, other.id].sort());
    await store.forgetActive(other.id);
    expect((await store.activeRuns()).map((a) => a.runId)).toEqual([run.id]);
  });

  it("indexes a sub-agent under its parent, and charges its spending to each ancestor's tree once", async () => {
    const parent = await running();
    const child = runRecord({ parentRunId: parent.id, ancestors: [parent.id], input: 'look it up' });
    const entry = { id: child.id, agent: 'researcher', step: 0, toolCallId: 'c1' };
    expect(await store.createChild(child, entry, event(child, 'run.queued'))).toBe(true);
    expect(await store.createChild(child, entry, event(child, 'run.queued'))).toBe(false);
    expect(await store.children(parent.id)).toEqual([entry]);
    expect(await store.messages(child.id)).toEqual([{ role: 'user', content: 'look it up' }]);
    const spent = { ...child, usage: { promptTokens: 5, completionTokens: 2, totalTokens: 7 }, costUsd: 0.01 };
    await store.chargeTree(spent);
    await store.chargeTree(spent);
    const [node] = await store.treeNodes([parent.id]);
    expect(node?.run?.id).toBe(parent.id);
    expect(node?.descendants).toEqual([{ promptTokens: 5, completionTokens: 2, totalTokens: 7, costUsd: 0.01 }]);
    expect((await store.readStep(parent.id, parent.step)).descendants).toHaveLength(1);
  });

  it('writes a compensation round only over none or a declined round before it', async () => {
    const run = await running();
    const round = (n: number, status: 'pending' | 'declined'): Compensation => ({
      schemaVersion: 1,
      round: n,
      status,
      trigger: 'request',
      requestedBy: 'alice',
      steps: [],
      createdAt: iso(T0),
      updatedAt: iso(T0),
    });
    expect(await store.saveCompensation(round(1, 'pending'), run.id, true)).toBe(true);
    expect(await store.saveCompensation(round(1, 'pending'), run.id, true)).toBe(false);
    expect(await store.saveCompensation(round(2, 'pending'), run.id, true)).toBe(false);
    expect(await store.saveCompensation(round(1, 'declined'), run.id)).toBe(true);
    expect(await store.saveCompensation(round(2, 'pending'), run.id, true)).toBe(true);
    expect((await store.compensation(run.id))?.round).toBe(2);
  });
});
