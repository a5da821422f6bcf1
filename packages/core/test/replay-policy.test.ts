import type { Approval, ReplaySettings, RunRecord, StepRecord, ToolCallRecord } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sampleEvenly } from '../src/features/replay/replay-cohort-service.js';
import { hashArguments } from '../src/policy/app/argument-hash.js';
import { diffRuns } from '../src/policy/run/run-diff.js';
import { type PlannedCall, planCalls } from '../src/policy/step/call-plan.js';
import { recordingOf, replayProfile, replayStep } from '../src/policy/step/replay-policy.js';

/** What a replay's tool call gets, as a pure function of the original's records (no Redis). */

const lookup = defineTool({
  name: 'lookup',
  description: 'read an order',
  kind: 'read',
  parameters: z.object({ orderNo: z.string() }),
  execute: () => ({}),
});
const note = defineTool({
  name: 'note',
  description: 'write, no approval',
  kind: 'write',
  parameters: z.object({ text: z.string() }),
  execute: () => ({}),
});
const refund = defineTool({
  name: 'refund',
  description: 'write, approved by a supervisor',
  kind: 'write',
  parameters: z.object({ orderNo: z.string(), amount: z.number() }),
  approval: (a) => ({ risk: 'high', requiredRole: 'supervisor', summary: `refund ${a.amount}` }),
  execute: () => ({}),
});
const tools = new Map<string, Tool>([lookup, note, refund].map((t) => [t.name, t]));
const profile = { name: 'a', instructions: 'be kind', tools: ['lookup', 'note', 'refund'] } as unknown as AgentProfile;
const NOW = Date.parse('2026-01-01T00:00:00Z');
const ORIGINAL = 'orig-run';
const replayRun = (step: number, replay: ReplaySettings = { liveReads: false, onNewApproval: 'reject' }) =>
  ({
    id: 'replay-run',
    tenantId: 'acme',
    userId: 'alice',
    roles: ['user'],
    step,
    deadlineAt: new Date(NOW + 60_000).toISOString(),
    mode: 'replay',
    replayOf: ORIGINAL,
    replay,
  }) as RunRecord;

const rec = (id: string, name: string, args: unknown, extra: Partial<ToolCallRecord> = {}): ToolCallRecord => ({
  id,
  name,
  arguments: args,
  outcome: 'ok',
  observation: `${name} result`,
  durationMs: 12,
  ...extra,
});
const stepOf = (index: number, toolCalls: ToolCallRecord[], thought: string | null = null): StepRecord => ({
  schemaVersion: 1,
  index,
  model: 'm',
  thought,
  toolCalls,
  usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
  costUsd: 0,
  durationMs: 1,
  finishedAt: new Date(NOW).toISOString(),
});
const approval = (over: Partial<Approval>): Approval =>
  ({
    id: 'ap-1',
    runId: ORIGINAL,
    step: 1,
    toolName: 'refund',
    arguments: { orderNo: 'A1', amount: 900 },
    argsHash: hashArguments({ orderNo: 'A1', amount: 900 }),
    risk: 'high',
    requiredRole: 'supervisor',
    status: 'approved',
    decidedBy: 'bob',
    ...over,
  }) as Approval;

const originalSteps = [
  stepOf(0, [rec('c0', 'lookup', { orderNo: 'A1' })]),
  stepOf(1, [rec('c1', 'refund', { orderNo: 'A1', amount: 900 }, { approvalId: 'ap-1', observation: 'refunded 900' })]),
];
const plannedFor = (step: number, calls: Array<[string, unknown]>, settings?: ReplaySettings): [RunRecord, PlannedCall[]] => {
  const run = replayRun(step, settings);
  const modelCalls = calls.map(([name, args], i) => ({ id: `r${i}`, name, arguments: JSON.stringify(args) }));
  return [run, planCalls({ run, profile, tools, calls: modelCalls, approvals: [], now: NOW, approvalTtlMs: 60_000 })];
};

describe('replayStep', () => {
  const recording = recordingOf(originalSteps, [approval({})]);

  it('answers a call matching the original by tool and canonical arguments with its recorded result', () => {
    const [run, planned] = plannedFor(0, [['lookup', { orderNo: 'A1' }]]);
    const { verdicts, stop } = replayStep(run, planned, recording);
    expect(stop).toBe(false);
    expect(verdicts).toEqual([
      {
        kind: 'record',
        record: {
          id: 'r0',
          name: 'lookup',
          arguments: { orderNo: 'A1' },
          outcome: 'ok',
          observation: 'lookup result',
          durationMs: 0,
          source: 'recorded',
        },
      },
    ]);
  });

  it('answers an approval the original had decided as it was decided, with that call’s result, and asks nobody', () => {
    const [run, planned] = plannedFor(1, [['refund', { amount: 900, orderNo: 'A1' }]]);
    expect(planned[0]?.kind).toBe('await_approval'); // live, this would park
    const [v] = replayStep(run, planned, recording).verdicts;
    expect(v).toMatchObject({ kind: 'record', record: { outcome: 'ok', observation: 'refunded 900', source: 'recorded' } });
    expect(v?.kind === 'record' && v.record.approvalId).toBeUndefined();
    const rejected = recordingOf(
      [
        stepOf(1, [
          rec(
            'c1',
            'refund',
            { orderNo: 'A1', amount: 900 },
            { approvalId: 'ap-1', outcome: 'rejected', observation: 'Not executed: rejected by bob: too much' },
          ),
        ]),
      ],
      [approval({ status: 'rejected', comment: 'too much' })],
    );
    expect(replayStep(run, planned, rejected).verdicts[0]).toMatchObject({
      record: { outcome: 'rejected', observation: 'Not executed: rejected by bob: too much', source: 'recorded' },
    });
  });

  it('answers the proposal of an approval the original had edited with the edited call and its result: no divergence', () => {
    const proposed = { orderNo: 'A1', amount: 900 };
    const edited = { orderNo: 'A1', amount: 500 };
    const observation = `Approved by bob with edited arguments ${JSON.stringify(edited)} (you proposed ${JSON.stringify(proposed)}). Result: refunded 500`;
    const steps = [
      stepOf(0, [rec('c0', 'lookup', { orderNo: 'A1' })]),
      stepOf(1, [rec('c1', 'refund', edited, { approvalId: 'ap-1', observation })]),
    ];
    // As an edit leaves the approval: the arguments the model proposed, the approved ones, and the hash of what ran.
    const recording = recordingOf(steps, [approval({ approvedArguments: edited, editedBy: 'bob', argsHash: hashArguments(edited) })]);
    const [run, planned] = plannedFor(1, [['refund', proposed]]);
    const { verdicts } = replayStep(run, planned, recording);
    expect(verdicts[0]).toMatchObject({
      kind: 'record',
      record: { id: 'r0', arguments: edited, outcome: 'ok', observation, source: 'recorded' },
    });
    expect(verdicts[0]?.kind === 'record' && verdicts[0].record.wouldNeedApproval).toBeUndefined();
    // The replay's trace then shows what the original's shows: the diff finds nothing changed.
    const replaySteps = [
      stepOf(0, [rec('r0', 'lookup', { orderNo: 'A1' })]),
      stepOf(1, [verdicts[0]?.kind === 'record' ? verdicts[0].record : rec('x', 'x', {})]),
    ];
    const side = (id: string, s: StepRecord[]) => ({
      run: { id, status: 'succeeded', finalAnswer: 'done', usage: s[0]?.usage, costUsd: 0 } as unknown as RunRecord,
      steps: s,
    });
    expect(diffRuns(side(ORIGINAL, steps), side('replay-run', replaySteps), [])).toMatchObject({ identical: true, divergedAtStep: null });
  });

  it('records an approval the original never had as would-need, rejected with reason replay, or stops there', () => {
    const [run, planned] = plannedFor(1, [['refund', { orderNo: 'A1', amount: 901 }]]);
    const { verdicts, stop } = replayStep(run, planned, recording);
    expect(stop).toBe(false);
    expect(verdicts[0]).toMatchObject({
      kind: 'record',
      record: { outcome: 'rejected', wouldNeedApproval: { risk: 'high', requiredRole: 'supervisor' } },
    });
    expect(verdicts[0]?.kind === 'record' && verdicts[0].record.observation).toMatch(/reason: replay/);
    const [stopping, again] = plannedFor(1, [['refund', { orderNo: 'A1', amount: 901 }]], { liveReads: false, onNewApproval: 'stop' });
    expect(replayStep(stopping, again, recording).stop).toBe(true);
  });

  it('never runs a write the original did not make: its observation says it was simulated', () => {
    const [run, planned] = plannedFor(2, [['note', { text: 'hello' }]]);
    expect(replayStep(run, planned, recording).verdicts[0]).toMatchObject({
      kind: 'record',
      record: { outcome: 'ok', source: 'simulated', observation: expect.stringMatching(/^Simulated/) },
    });
  });

  it('answers a read the original never made with not_recorded, or runs it live with liveReads', () => {
    const [run, planned] = plannedFor(2, [['lookup', { orderNo: 'B2' }]]);
    expect(replayStep(run, planned, recording).verdicts[0]).toMatchObject({
      record: { outcome: 'error', source: 'not_recorded', observation: expect.stringMatching(/^not_recorded/) },
    });
    const [live, again] = plannedFor(2, [['lookup', { orderNo: 'B2' }]], { liveReads: true, onNewApproval: 'reject' });
    expect(replayStep(live, again, recording).verdicts).toEqual([{ kind: 'live' }]);
  });

  it('keeps a refusal a refusal and starts no sub-agent', () => {
    const [run, planned] = plannedFor(0, [['nope', {}]]);
    expect(replayStep(run, planned, recording).verdicts[0]).toMatchObject({ record: { outcome: 'unknown_tool' } });
  });
});

describe('replayProfile', () => {
  it('overrides the instructions and the model a replay names, and nothing else', () => {
    expect(replayProfile({}, profile)).toBe(profile);
    const run = {
      mode: 'replay' as const,
      replay: { model: 'm2', instructions: 'be brief', liveReads: false, onNewApproval: 'reject' as const },
    };
    expect(replayProfile(run, profile)).toEqual({ ...profile, instructions: 'be brief', models: ['m2'] });
  });

  it('fails a replay out of budget instead of asking a person for more', () => {
    const asking = { ...profile, onBudget: 'ask' } as AgentProfile;
    const run = { mode: 'replay' as const, replay: { liveReads: false, onNewApproval: 'reject' as const } };
    expect(replayProfile(run, asking).onBudget).toBe('fail');
    expect(replayProfile({}, asking).onBudget).toBe('ask');
  });
});

describe('diffRuns', () => {
  const runOf = (id: string, finalAnswer: string) =>
    ({
      id,
      status: 'succeeded',
      reason: 'completed',
      finalAnswer,
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
      costUsd: 0,
    }) as RunRecord;

  it('is identical when every step calls the same tools with the same arguments (any key order) and the answer is the same', () => {
    const replay = [stepOf(0, [rec('x', 'lookup', { orderNo: 'A1' }, { source: 'recorded' })]), stepOf(1, [], 'done')];
    const d = diffRuns(
      { run: runOf('o', 'done'), steps: [originalSteps[0] as StepRecord, stepOf(1, [], 'done')] },
      { run: runOf('r', 'done'), steps: replay },
      [],
    );
    expect(d).toMatchObject({ identical: true, divergedAtStep: null, toolCalls: { added: [], removed: [], changedArguments: [] } });
  });

  it('points at the first step whose calls differ, listing added, removed and changed calls', () => {
    const replay = [
      stepOf(0, [rec('x', 'lookup', { orderNo: 'A1' })]),
      stepOf(1, [rec('y', 'refund', { orderNo: 'A1', amount: 5 }), rec('z', 'note', { text: 'n' }, { source: 'simulated' })]),
    ];
    const d = diffRuns({ run: runOf('o', 'a'), steps: originalSteps }, { run: runOf('r', 'b'), steps: replay }, []);
    expect(d.divergedAtStep).toBe(1);
    expect(d.toolCalls.changedArguments).toEqual([
      { step: 1, name: 'refund', original: { orderNo: 'A1', amount: 900 }, replay: { orderNo: 'A1', amount: 5 } },
    ]);
    expect(d.toolCalls.added.map((c) => [c.name, c.source])).toEqual([
      ['refund', undefined],
      ['note', 'simulated'],
    ]);
    expect(d.toolCalls.removed.map((c) => c.name)).toEqual(['refund']);
    expect(d.finalAnswer).toEqual({ original: 'a', replay: 'b', same: false });
  });

  it('with the same structure but another answer, diverges at the last step (text comes second)', () => {
    const d = diffRuns(
      { run: runOf('o', 'yes'), steps: [stepOf(0, [], 'yes')] },
      { run: runOf('r', 'no'), steps: [stepOf(0, [], 'no')] },
      [],
    );
    expect(d).toMatchObject({ identical: false, divergedAtStep: 0, steps: [{ index: 0, same: true }] });
  });
  it('of a replay still running, names no divergence at steps it has not reached yet', () => {
    const running = { ...runOf('r', ''), status: 'queued', finalAnswer: undefined } as unknown as RunRecord;
    const queued = diffRuns({ run: runOf('o', 'a'), steps: originalSteps }, { run: running, steps: [] }, []);
    expect(queued).toMatchObject({ identical: false, divergedAtStep: null, status: 'queued' });
    const halfway = diffRuns(
      { run: runOf('o', 'a'), steps: originalSteps },
      { run: { ...running, status: 'running' } as RunRecord, steps: [stepOf(0, [rec('x', 'lookup', { orderNo: 'A1' })])] },
      [],
    );
    expect(halfway.divergedAtStep).toBeNull();
    // A step it reached that differs is a divergence already.
    const differs = diffRuns(
      { run: runOf('o', 'a'), steps: originalSteps },
      { run: { ...running, status: 'running' } as RunRecord, steps: [stepOf(0, [rec('x', 'lookup', { orderNo: 'B2' })])] },
      [],
    );
    expect(differs.divergedAtStep).toBe(0);
  });
});

describe('sampleEvenly', () => {
  it('spreads the sample over the whole window, oldest to newest, and keeps all when there are fewer', () => {
    const ids = Array.from({ length: 20 }, (_, i) => `r${i}`);
    expect(sampleEvenly(ids, 5)).toEqual(['r0', 'r4', 'r8', 'r12', 'r16']);
    expect(sampleEvenly(ids.slice(0, 3), 5)).toEqual(['r0', 'r1', 'r2']);
  });
});
