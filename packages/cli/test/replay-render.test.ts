import type { ReplayCohortView, RunDiff } from '@rein/client';
import { describe, expect, it } from 'vitest';
import { cohortReport, crossed, renderDiff, sinceInstant, threshold } from '../src/replay.js';

const usage = { promptTokens: 1, completionTokens: 1, totalTokens: 2 };
const call = (step: number, name: string, args: unknown, source?: string) => ({
  step,
  name,
  arguments: args,
  argsHash: JSON.stringify(args),
  outcome: 'ok',
  ...(source ? { source } : {}),
});
const diff: RunDiff = {
  replayOf: 'r1',
  identical: false,
  divergedAtStep: 1,
  status: 'succeeded',
  steps: [
    {
      index: 0,
      original: { thought: null, calls: [call(0, 'lookup', { n: 1 })] },
      replay: { thought: null, calls: [call(0, 'lookup', { n: 1 }, 'recorded')] },
      same: true,
    },
    {
      index: 1,
      original: { thought: 'yes', calls: [] },
      replay: { thought: null, calls: [call(1, 'note', { t: 'x' }, 'simulated')] },
      same: false,
    },
  ],
  toolCalls: { added: [call(1, 'note', { t: 'x' }, 'simulated')], removed: [], changedArguments: [] },
  approvals: { original: [], wouldNeed: [] },
  usage: { original: usage, replay: usage },
  costUsd: { original: 0, replay: 0 },
  finalAnswer: { original: 'yes', replay: 'no', same: false },
  output: { same: true },
};

describe('rein replay output', () => {
  it('prints a diff side by side, marking the steps whose structure differs and what was simulated', () => {
    const text = renderDiff(diff, 30);
    expect(text).toContain('replay of r1: diverged at step 1 (succeeded)');
    expect(text).toMatch(/^ {2}0 {2}lookup\(\{"n":1\}\) +│ lookup\(\{"n":1\}\)$/m);
    expect(text).toMatch(/^≠ 1 {2}answer: yes +│ \[simulated\] note\(\{"t":"x"\}\)$/m);
    expect(text).toContain('added calls: note({"t":"x"}) [simulated] @1');
  });

  it('reads durations and shares, and fails the gate only past the threshold', () => {
    expect(sinceInstant('24h', Date.parse('2026-01-02T00:00:00Z'))).toBe('2026-01-01T00:00:00.000Z');
    expect(() => sinceInstant('yesterday')).toThrow(/--since/);
    expect(threshold('10%')).toBeCloseTo(0.1);
    expect(threshold('0.25')).toBe(0.25);
    const view = (diverged: number) =>
      ({
        id: 'c',
        agent: 'a',
        status: 'finished',
        createdAt: 'now',
        settings: { model: 'm2' },
        summary: {
          total: 10,
          replayed: 10,
          identical: 10 - diverged,
          diverged,
          skipped: 0,
          wouldNeedApprovals: 0,
          nowFail: 0,
          tokens: { original: 1, replay: 2 },
          costUsd: { original: 0, replay: 0 },
        },
        runs: [],
      }) as ReplayCohortView;
    expect(crossed(view(1), 0.1)).toBe(false);
    expect(crossed(view(2), 0.1)).toBe(true);
    expect(cohortReport(view(2), 0.1)).toContain('**FAILED**: 2 of 10 diverged (20.0%; the threshold is 10.0%)');
    // Nothing replayed is nothing to judge: the gate fails, whatever the threshold.
    const empty = { ...view(0), summary: { ...view(0).summary, replayed: 0, identical: 0, skipped: 10 } };
    expect(crossed(empty, 1)).toBe(true);
    expect(cohortReport(empty, 1)).toContain('**FAILED**: nothing to judge: none of its 10 runs was replayed (10 skipped).');
  });
});
