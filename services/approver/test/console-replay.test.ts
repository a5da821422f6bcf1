import { describe, expect, it } from 'vitest';
import { replayDiffable, replayHeadline } from '../src/console/src/replay-state.js';

describe("the console's replay panel", () => {
  it('shows a queued or running replay by its status, with no diff: it has not reached the steps yet', () => {
    for (const status of ['queued', 'running', 'pending_approval']) {
      expect(replayDiffable(status)).toBe(false);
      expect(replayHeadline(status, { identical: false, divergedAtStep: 0 })).toBe(
        `is ${status}: the diff with the original comes once it has finished`,
      );
    }
  });

  it('draws the verdict once the replay has finished', () => {
    expect(replayDiffable('succeeded')).toBe(true);
    expect(replayHeadline('succeeded', { identical: true, divergedAtStep: null })).toBe('identical');
    expect(replayHeadline('failed', { identical: false, divergedAtStep: 2 })).toBe('diverged at step 2');
    expect(replayHeadline('failed', { identical: false, divergedAtStep: null })).toBe('ended otherwise (failed)');
  });
});
