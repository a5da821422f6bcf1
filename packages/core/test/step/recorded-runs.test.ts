import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decided, type RecordedRun, replayRecordedStep } from './recording.js';

/**
 * The recorded runs (test/step/recorded/, recorded on the real engine by
 * record-runs.int.test.ts) replayed through the pure policy alone: no Redis, no model, no
 * tool. Each step's decision must be the one the engine committed.
 */

const dir = new URL('./recorded/', import.meta.url);
const recordings = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((file) => ({ file, rec: JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as RecordedRun }));

describe.each(recordings)('the recorded run $file', ({ rec }) => {
  // Events carry the time they were built at: the recording's clock.
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: rec.settings.now });
  });
  afterAll(() => {
    vi.useRealTimers();
  });

  it.each(rec.steps.map((step, i) => ({ i, step, label: `${step.run.step} (${step.run.status}): ${step.transition.kind}` })))(
    'decides step $label as the engine did',
    ({ i, step }) => {
      expect(decided(replayRecordedStep(rec, step, rec.steps.slice(0, i)))).toEqual(decided(step.transition));
    },
  );
});

it('replays the five recorded runs', () => {
  expect(recordings.map((r) => r.file).sort()).toEqual([
    'approved-with-edit.json',
    'malformed-reply.json',
    'over-budget.json',
    'rejected.json',
    'two-steps.json',
  ]);
});
