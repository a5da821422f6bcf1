import { defineTool } from '@rein/define/internal';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compensateJobSchema } from '../src/adapters/queue/job-catalog.js';
import { type Compensator, createCompensator } from '../src/features/compensation/compensation.js';
import { runKeys } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import type { Harness } from './harness.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

/** A write that starts, then waits for the test to let it finish: the test cancels the run in between. */
function slowWrite() {
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
    description: 'Books a slot (slow).',
    kind: 'write',
    parameters: z.object({ slot: z.string() }),
    async execute({ slot }) {
      started();
      await gate;
      effects.push(slot);
      return { booked: slot };
    },
    compensate: async ({ slot }) => {
      effects.push(`unbooked ${slot}`);
      return { unbooked: slot };
    },
  });
  return { tool, effects, running, release };
}

function compensatorOf(t: Harness) {
  return createCompensator({
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
}

describe('a write that finishes after its run was cancelled', () => {
  it("is recorded in the run's trace and saga: auto compensation undoes it, the ledger is not written back", async () => {
    const slow = slowWrite();
    let compensator: Compensator | undefined;
    const model = createFakeModel([{ toolCalls: [toolCall('b', 'book_slot', { slot: 'mon-9' })] }, { content: 'booked' }]);
    const t = use(model, {
      extraTools: [slow.tool],
      profile: { compensation: 'auto' },
      onFinished: (run) => compensator?.onRunFinished(run) ?? Promise.resolve(),
    });
    compensator = compensatorOf(t);
    const id = await t.submit('book monday 9');
    const draining = t.drain();
    await slow.running;
    expect((await t.runs.cancel(USER, id)).status).toBe('cancelled');
    // Nothing to undo yet: the write has not finished.
    expect(await t.store.compensation(id)).toBeNull();
    slow.release();
    await draining;

    expect(slow.effects).toEqual(['mon-9']);
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'cancelled', reason: 'cancelled' });
    const steps = await t.store.steps(id);
    expect(steps.map((s) => s.toolCalls.map((c) => [c.name, c.outcome]))).toEqual([[['book_slot', 'ok']]]);
    expect(await t.redis.exists(runKeys(id).effects)).toBe(0);
    const events = await t.store.readEvents(id, '0');
    expect(events.some((e) => e.event.type === 'step.finished' && e.event.data.afterFinish === true)).toBe(true);

    // The finish hook saw the late write: 'auto' compensates it.
    expect(await t.store.compensation(id)).toMatchObject({ status: 'running', steps: [{ tool: 'book_slot', status: 'pending' }] });
    const job = t.queue.find((q) => q.name === 'compensate');
    await compensator.process(compensateJobSchema.parse(job?.job), false);
    expect(slow.effects).toEqual(['mon-9', 'unbooked mon-9']);
  });

  it('is seen by the compensate endpoint of a run whose agent never compensates by itself', async () => {
    const slow = slowWrite();
    const model = createFakeModel([{ toolCalls: [toolCall('b', 'book_slot', { slot: 'tue-10' })] }, { content: 'booked' }]);
    const t = use(model, { extraTools: [slow.tool], profile: { compensation: 'never' } });
    const id = await t.submit('book tuesday 10');
    const draining = t.drain();
    await slow.running;
    await t.runs.cancel(USER, id);
    slow.release();
    await draining;
    const c = await compensatorOf(t).request(APPROVER, id);
    expect(c.steps.map((s) => [s.tool, s.toolCallId])).toEqual([['book_slot', 'b']]);
  });
});
