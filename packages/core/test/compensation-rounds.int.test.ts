import { defineAgent, defineTool } from '@rein/define/internal';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compensateJobSchema } from '../src/adapters/queue/job-catalog.js';
import { type Compensator, createCompensator } from '../src/features/compensation/compensation.js';
import { ROLLBACK_DECLINED_TURN, ROLLBACK_FAILED_TURN } from '../src/features/runs/session-history.js';
import { createSessionQueue } from '../src/features/runs/session-queue.js';
import { childRunId } from '../src/policy/step/sub-agents.js';
import { ToolError } from '../src/shared/errors.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import type { Harness, HarnessOptions } from './harness.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

/**
 * A write tool booking slots; the call booking `slow` waits, once started, for the test to
 * let it finish (the test ends its run in between). `failUndo`: every undo throws.
 */
function bookings(opts: { slow?: string; failUndo?: boolean } = {}) {
  const effects: string[] = [];
  let started!: () => void;
  let release!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const tool = defineTool({
    name: 'book_slot',
    description: 'Books a slot.',
    kind: 'write',
    parameters: z.object({ slot: z.string() }),
    // Longer than any test: only the test's release ends the slow call.
    timeoutMs: 600_000,
    async execute({ slot }) {
      if (slot === opts.slow) {
        started();
        await gate;
      }
      effects.push(slot);
      return { booked: slot };
    },
    compensate: async ({ slot }) => {
      if (opts.failUndo) throw new ToolError('slot_in_use', `slot ${slot} is in use and cannot be freed`);
      effects.push(`unbooked ${slot}`);
      return { unbooked: slot };
    },
  });
  return { tool, effects, running, release };
}

/** The harness with the runtime's saga wiring: the compensator as finish hook, compensate jobs run on demand, a session queue. */
function sagaHarness(model: ReturnType<typeof createFakeModel>, opts: HarnessOptions) {
  let compensator: Compensator | undefined;
  const t: Harness = use(model, { ...opts, onFinished: (run) => compensator?.onRunFinished(run) ?? Promise.resolve() });
  const saga = createCompensator({
    store: t.store,
    applier: t.applier,
    ledger: t.ledger,
    tools: t.tools,
    agents: t.agents,
    enqueue: t.enqueue,
    metrics: t.metrics,
    logger: pino({ level: 'silent' }),
    emit: async () => undefined,
    toolTimeoutMs: 2000,
    approvalTtlMs: 60_000,
  });
  compensator = saga;
  const sessions = createSessionQueue({
    store: t.store,
    sessionRegistry: t.sessionRegistry,
    applier: t.applier,
    sessions: { windowTokens: 8000, toolTraffic: false, model: 'fake-model' },
    undoSettled: saga.settled,
    waitingForSlot: async () => false,
    logger: pino({ level: 'silent' }),
  });
  /** Runs the queued compensate jobs, as the worker does. */
  const work = async () => {
    for (let i = t.queue.findIndex((q) => q.name === 'compensate'); i >= 0; i = t.queue.findIndex((q) => q.name === 'compensate')) {
      const [job] = t.queue.splice(i, 1);
      await saga.process(compensateJobSchema.parse(job?.job), false);
    }
  };
  return { t, saga, sessions, work };
}

const undone = (c: { steps: Array<{ runId?: string; arguments: unknown; status: string }> } | null | undefined) =>
  c?.steps.map((s) => [s.runId ?? null, (s.arguments as { slot: string }).slot, s.status]);

describe('a write that lands after its run’s saga was planned', () => {
  it('session rollback: the slow write in flight at the interrupt is undone by a second round, and the view lists both', async () => {
    const slots = bookings({ slow: 'A-slow' });
    const model = createFakeModel([
      { toolCalls: [toolCall('w1', 'book_slot', { slot: 'A-before' })] },
      { toolCalls: [toolCall('w2', 'book_slot', { slot: 'A-slow' })] },
      { content: 'B answered' },
    ]);
    const { t, saga, sessions, work } = sagaHarness(model, { extraTools: [slots.tool], profile: { compensation: 'never' } });
    const a = (await t.runs.submit(USER, { input: 'book A', sessionId: 's' })).run.id;
    const draining = t.drain();
    await slots.running;
    const b = (await t.runs.submit(USER, { input: 'never mind', sessionId: 's', ifBusy: 'rollback' })).run;
    expect(b).toMatchObject({ status: 'queued', queuedBehind: a });
    expect(await t.store.require(a)).toMatchObject({ status: 'cancelled', reason: 'interrupted' });

    // The first round undoes what was recorded at the interrupt; the session goes on.
    await work();
    expect(await t.store.compensation(a)).toMatchObject({ round: 1, status: 'done' });
    expect(await sessions.admitNext(a)).toBe('admitted');

    // The slow write lands: recorded on the finished run, it starts the next round by itself.
    slots.release();
    await draining;
    expect(await t.store.compensation(a)).toMatchObject({ round: 2, status: 'running', trigger: 'auto' });
    await work();
    expect(slots.effects).toEqual(['A-before', 'unbooked A-before', 'A-slow', 'unbooked A-slow']);
    const view = (await t.runs.get(USER, a)).compensation;
    expect(view).toMatchObject({ round: 2, status: 'done' });
    expect(undone(view)).toEqual([
      [null, 'A-slow', 'done'],
      [null, 'A-before', 'done'],
    ]);
    // Every write is undone: asking again has nothing to do, and nothing is undone twice.
    await expect(saga.request(APPROVER, a)).rejects.toMatchObject({ code: 'nothing_to_compensate', status: 409 });
    await t.drain();
    expect((await t.store.require(b.id)).status).toBe('succeeded');
    expect(slots.effects.filter((e) => e.startsWith('unbooked'))).toHaveLength(2);
  });

  it("cancel of an 'auto' run mid-write: the write that lands after the first round is undone by the next", async () => {
    const slots = bookings({ slow: 'slow' });
    const model = createFakeModel([
      { toolCalls: [toolCall('w1', 'book_slot', { slot: 'before' })] },
      { toolCalls: [toolCall('w2', 'book_slot', { slot: 'slow' })] },
    ]);
    const { t, work } = sagaHarness(model, { extraTools: [slots.tool], profile: { compensation: 'auto' } });
    const id = await t.submit('book two');
    const draining = t.drain();
    await slots.running;
    await t.runs.cancel(USER, id);
    await work();
    expect(undone(await t.store.compensation(id))).toEqual([[null, 'before', 'done']]);
    slots.release();
    await draining;
    await work();
    const c = await t.store.compensation(id);
    expect(c).toMatchObject({ round: 2, status: 'done' });
    expect(undone(c)).toEqual([
      [null, 'slow', 'done'],
      [null, 'before', 'done'],
    ]);
    expect(slots.effects).toEqual(['before', 'unbooked before', 'slow', 'unbooked slow']);
  });

  it("an 'ask' run: the late write is a new pending compensation with an approval of its own undo", async () => {
    const slots = bookings({ slow: 'slow' });
    const model = createFakeModel([
      { toolCalls: [toolCall('w1', 'book_slot', { slot: 'before' })] },
      { toolCalls: [toolCall('w2', 'book_slot', { slot: 'slow' })] },
    ]);
    const { t, saga, work } = sagaHarness(model, { extraTools: [slots.tool], profile: { compensation: 'ask' } });
    const id = await t.submit('book two');
    const draining = t.drain();
    await slots.running;
    await t.runs.cancel(USER, id);
    const first = await t.store.compensation(id);
    await t.approvals.decide(APPROVER, first?.approvalId ?? '', { kind: 'approve' });
    await saga.decided(await t.store.require(id));
    await work();
    expect(await t.store.compensation(id)).toMatchObject({ round: 1, status: 'done' });
    slots.release();
    await draining;
    const second = await t.store.compensation(id);
    expect(second).toMatchObject({ round: 2, status: 'pending', trigger: 'ask' });
    const plan = (await t.store.approvals(id)).find((x) => x.id === second?.approvalId);
    expect(plan?.status).toBe('pending');
    expect((plan?.arguments as { undo: Array<{ arguments: unknown }> } | undefined)?.undo.map((u) => u.arguments)).toEqual([
      { slot: 'slow' },
    ]);
    await t.approvals.decide(APPROVER, plan?.id ?? '', { kind: 'approve' });
    await saga.decided(await t.store.require(id));
    await work();
    expect(undone(await t.store.compensation(id))).toEqual([
      [null, 'slow', 'done'],
      [null, 'before', 'done'],
    ]);
  });

  it('tree: a leaf’s write that lands after its root was cancelled is undone by a round of the root’s saga', async () => {
    const slots = bookings({ slow: 'leaf-slow' });
    const helper = defineAgent({ name: 'helper', description: 'Books slots.', instructions: 'You are the helper.', tools: ['book_slot'] });
    const model = createFakeModel([
      { toolCalls: [toolCall('c1', 'call_helper', { input: 'book two' })] },
      { toolCalls: [toolCall('w1', 'book_slot', { slot: 'leaf-before' })] },
      { toolCalls: [toolCall('w2', 'book_slot', { slot: 'leaf-slow' })] },
    ]);
    const { t, saga, work } = sagaHarness(model, {
      extraTools: [slots.tool],
      agents: [helper],
      profile: { agents: ['helper'], compensation: 'auto' },
    });
    const root = await t.submit('have the helper book two');
    const leaf = childRunId(root, 0, 'c1');
    const draining = t.drain();
    await slots.running;
    await t.runs.cancel(USER, root);
    await work();
    expect(undone(await t.store.compensation(root))).toEqual([[leaf, 'leaf-before', 'done']]);
    expect((await t.store.require(leaf)).status).toBe('cancelled');
    slots.release();
    await draining;
    await work();
    // The root's view covers the whole tree; the leaf has no saga of its own.
    expect((await t.runs.get(USER, root)).compensation).toMatchObject({ round: 2, status: 'done' });
    expect(undone(await t.store.compensation(root))).toEqual([
      [leaf, 'leaf-slow', 'done'],
      [leaf, 'leaf-before', 'done'],
    ]);
    expect(await t.store.compensation(leaf)).toBeNull();
    expect(slots.effects).toEqual(['leaf-before', 'unbooked leaf-before', 'leaf-slow', 'unbooked leaf-slow']);
    await expect(saga.request(APPROVER, root)).rejects.toMatchObject({ code: 'nothing_to_compensate' });
  });

  it("tree, 'never': the approver's compensate on the root reaches the leaf's late write", async () => {
    const slots = bookings({ slow: 'leaf-slow' });
    const helper = defineAgent({ name: 'helper', description: 'Books slots.', instructions: 'You are the helper.', tools: ['book_slot'] });
    const model = createFakeModel([
      { toolCalls: [toolCall('c1', 'call_helper', { input: 'book two' })] },
      { toolCalls: [toolCall('w1', 'book_slot', { slot: 'leaf-before' })] },
      { toolCalls: [toolCall('w2', 'book_slot', { slot: 'leaf-slow' })] },
    ]);
    const { t, saga, work } = sagaHarness(model, {
      extraTools: [slots.tool],
      agents: [helper],
      profile: { agents: ['helper'], compensation: 'never' },
    });
    const root = await t.submit('have the helper book two');
    const draining = t.drain();
    await slots.running;
    await t.runs.cancel(USER, root);
    await saga.request(APPROVER, root);
    await work();
    expect(await t.store.compensation(root)).toMatchObject({ round: 1, status: 'done' });
    slots.release();
    await draining;
    // 'never' starts no round by itself; the approver's request undoes what the first one did not cover.
    expect(await t.store.compensation(root)).toMatchObject({ round: 1, status: 'done' });
    expect(await saga.request(APPROVER, root)).toMatchObject({ round: 2, status: 'running' });
    await work();
    expect(slots.effects).toEqual(['leaf-before', 'unbooked leaf-before', 'leaf-slow', 'unbooked leaf-slow']);
  });
});

describe('a rolled-back turn in the session’s history', () => {
  /** Run A books a slot, then parks for a ticket's approval; B arrives with `ifBusy: rollback`. */
  async function rolledBack(policy: 'auto' | 'ask') {
    const slots = bookings({ failUndo: true });
    const model = createFakeModel([
      { toolCalls: [toolCall('w1', 'book_slot', { slot: 'A-slot' })] },
      {
        toolCalls: [
          toolCall('t1', 'create_ticket', { orderNo: '2024001', type: 'late shipment', priority: 'high', suggestedAction: 'call back' }),
        ],
      },
      { content: 'B answered' },
    ]);
    const h = sagaHarness(model, { extraTools: [slots.tool], profile: { compensation: policy } });
    const a = (await h.t.runs.submit(USER, { input: 'book A', sessionId: 'hist' })).run.id;
    await h.t.drain();
    expect((await h.t.store.require(a)).status).toBe('pending_approval');
    const b = (await h.t.runs.submit(USER, { input: 'what now?', sessionId: 'hist', ifBusy: 'rollback' })).run.id;
    /** B's first prompt, once admitted and run. */
    const bSaw = async () => {
      expect(await h.sessions.admitNext(a)).toBe('admitted');
      await h.t.drain();
      expect((await h.t.store.require(b)).status).toBe('succeeded');
      return (model.requests[2]?.messages ?? []).filter((m) => m.role !== 'system').map((m) => [m.role, m.content]);
    };
    return { ...h, a, slots, bSaw };
  }

  it('stays, marked, when its undo failed: the write stands and the conversation knows it', async () => {
    const { t, a, work, slots, bSaw } = await rolledBack('auto');
    await work();
    expect(await t.store.compensation(a)).toMatchObject({ status: 'failed', code: 'compensation_failed' });
    expect(slots.effects).toEqual(['A-slot']);
    expect(await bSaw()).toEqual([
      ['user', 'book A'],
      ['assistant', ROLLBACK_FAILED_TURN],
      ['user', 'what now?'],
    ]);
  });

  it('stays, marked, when its undo was declined', async () => {
    const { t, saga, a, work, bSaw } = await rolledBack('ask');
    const c = await t.store.compensation(a);
    expect(c).toMatchObject({ status: 'pending' });
    await t.approvals.decide(APPROVER, c?.approvalId ?? '', { kind: 'reject', reason: 'keep the booking' });
    await saga.decided(await t.store.require(a));
    await work();
    const declined = await t.store.compensation(a);
    expect(declined).toMatchObject({ status: 'declined' });
    // The view says the write was not undone, and why.
    expect(undone(declined)).toEqual([[null, 'A-slot', 'declined']]);
    expect(await bSaw()).toEqual([
      ['user', 'book A'],
      ['assistant', ROLLBACK_DECLINED_TURN],
      ['user', 'what now?'],
    ]);
  });
});
