import type { RunRecord } from '@rein/contract';
import type { RunRepository, TurnJournal } from '@rein/core/internal';
import { beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, type BackendKind, useBackend } from './backends.js';
import { event, runRecord, stepRecord, TTL_SECONDS } from './fixtures.js';

/** The TurnJournal port's behaviours on one Redis, a 3-master cluster and the in-memory fake. */
describe.each<BackendKind>(BACKENDS)('the turn journal on %s', (kind) => {
  const backend = useBackend(kind, TTL_SECONDS);
  let store: RunRepository & TurnJournal;
  beforeEach(() => {
    store = backend().runs;
  });

  async function created(over: Partial<RunRecord> = {}): Promise<RunRecord> {
    const run = runRecord(over);
    await store.create(run, { role: 'user', content: run.input }, event(run, 'run.queued'), [{ role: 'user', content: 'earlier' }]);
    return run;
  }

  it('keeps the conversation in order: a session history, the input, then what each commit appends', async () => {
    const run = await created();
    await store.compareAndSet({ from: run, to: { ...run, status: 'running' }, messages: [{ role: 'assistant', content: 'one' }] });
    expect(await store.messages(run.id)).toEqual([
      { role: 'user', content: 'earlier' },
      { role: 'user', content: run.input },
      { role: 'assistant', content: 'one' },
    ]);
    expect(await store.messages('no-such-run')).toEqual([]);
  });

  it('reads the committed steps by index, one or all', async () => {
    let run = await created();
    for (const index of [0, 1, 2]) run = await store.compareAndSet({ from: run, to: { ...run, step: index + 1 }, step: stepRecord(index) });
    expect((await store.steps(run.id)).map((s) => s.index)).toEqual([0, 1, 2]);
    expect((await store.stepRecord(run.id, 1))?.thought).toBe('step 1');
    expect(await store.stepRecord(run.id, 7)).toBeNull();
  });

  it('records a late step only once its run is finished, and only a step without a record', async () => {
    const run = await created();
    expect(await store.recordAfterFinish(run.id, stepRecord(0))).toBe(false);
    expect(await store.steps(run.id)).toEqual([]);
    const finished = await store.compareAndSet({
      from: run,
      to: { ...run, status: 'cancelled', reason: 'cancelled' },
      step: stepRecord(0),
    });
    expect(await store.recordAfterFinish(finished.id, { ...stepRecord(0), thought: 'late' })).toBe(false);
    expect(await store.recordAfterFinish(finished.id, stepRecord(1))).toBe(true);
    expect(await store.recordAfterFinish(finished.id, stepRecord(1))).toBe(false);
    expect((await store.steps(run.id)).map((s) => s.thought)).toEqual(['step 0', 'step 1']);
    const late = (await store.readEvents(run.id, '0-0')).map((e) => e.event).filter((e) => e.type === 'step.finished');
    expect(late).toEqual([expect.objectContaining({ runId: run.id, step: 1, data: { afterFinish: true, toolCalls: 0 } })]);
  });
});
