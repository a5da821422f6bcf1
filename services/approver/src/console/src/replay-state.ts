import type { RunDiff } from '@rein/contract';
import { TERMINAL } from './format.js';

/** Whether a replay has a diff worth drawing: before it finishes, every step it has not reached would read as changed. */
export const replayDiffable = (status: string): boolean => TERMINAL.includes(status);

/** The line the console shows beside a replay: its status while it runs, its verdict once it has finished. */
export function replayHeadline(status: string, diff?: Pick<RunDiff, 'identical' | 'divergedAtStep'>): string {
  if (!replayDiffable(status) || !diff) return `is ${status}: the diff with the original comes once it has finished`;
  if (diff.identical) return 'identical';
  return diff.divergedAtStep !== null ? `diverged at step ${diff.divergedAtStep}` : `ended otherwise (${status})`;
}
