import type { Approval, ReplaySettings, RunRecord, StepRecord, ToolCallRecord } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { hashArguments } from '../app/argument-hash.js';
import { type PlannedCall, plannedRecord, transferRecord } from './call-plan.js';

/**
 * What a replay's tool call gets instead of reaching the world (pure): the original run's
 * recorded result when the tool and its canonical arguments match one of its calls; else,
 * for a read, `not_recorded` (or a live run with `liveReads`), for a write, a simulated
 * observation. An approval the original decided is answered as it was; one it never had
 * is recorded as "would need approval" and treated as rejected (reason `replay`), or the
 * replay stops there.
 */

/** A tool call of the original as a replay finds it: where it was made and what it got. */
interface RecordedCall {
  step: number;
  record: ToolCallRecord;
}

/** The original run's calls and approvals, by tool and canonical arguments hash. */
export interface ReplayRecording {
  calls: ReadonlyMap<string, readonly RecordedCall[]>;
  /** Decided approvals by tool and the hash of the arguments the model proposed, with the record of the call each gated. */
  approvals: ReadonlyMap<string, ReadonlyArray<{ approval: Approval; record: ToolCallRecord }>>;
}

/** What one planned call of a replay step becomes: its record, or a live run (a read, with `liveReads`). */
export type ReplayVerdict = { kind: 'record'; record: ToolCallRecord } | { kind: 'live' };

/** A step's verdicts, one per planned call in order; `stop`: a new approval ends the replay after this step. */
export interface ReplayStep {
  verdicts: ReplayVerdict[];
  stop: boolean;
}

/** Outcomes of a call whose tool ran in the original: its result is what a replay gets. */
const RAN: readonly ToolCallRecord['outcome'][] = ['ok', 'error', 'uncertain'];

const callKey = (name: string, args: unknown) => `${name}\n${hashArguments(args)}`;

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Indexes the original's committed steps and approvals (what `GET /v1/runs/:id/trace` shows). */
export function recordingOf(steps: readonly StepRecord[], approvals: readonly Approval[]): ReplayRecording {
  const calls = new Map<string, RecordedCall[]>();
  const gated = new Map<string, ToolCallRecord>();
  for (const step of steps) {
    for (const record of step.toolCalls) {
      if (record.approvalId) gated.set(record.approvalId, record);
      if (RAN.includes(record.outcome) && !record.approvalId)
        push(calls, callKey(record.name, record.arguments), { step: step.index, record });
    }
  }
  const decided = new Map<string, Array<{ approval: Approval; record: ToolCallRecord }>>();
  for (const approval of approvals) {
    const record = gated.get(approval.id);
    if (approval.status === 'pending' || !record || record.outcome === 'awaiting_approval') continue;
    // By what the model proposed: an approver's edit moves `argsHash` to the edited arguments, and a replay proposes again.
    push(decided, callKey(approval.toolName, approval.arguments), { approval, record });
  }
  return { calls, approvals: decided };
}

/** The same step's match when the original has one there, else its first. */
const nearest = <T extends { step: number }>(list: readonly T[] | undefined, step: number): T | undefined =>
  list?.find((c) => c.step === step) ?? list?.[0];

/** What each planned call of a replay's step gets. */
export function replayStep(
  run: Pick<RunRecord, 'step'> & { replay?: ReplaySettings },
  planned: readonly PlannedCall[],
  recording: ReplayRecording,
): ReplayStep {
  const settings = run.replay ?? { liveReads: false, onNewApproval: 'reject' as const };
  const verdicts = planned.map((p) => verdictFor(p, run.step, settings, recording));
  // A call the original never had approved stops the replay after this step, when the caller asked so.
  const stop = settings.onNewApproval === 'stop' && verdicts.some((v) => v.kind === 'record' && v.record.wouldNeedApproval);
  return { verdicts, stop };
}

function verdictFor(p: PlannedCall, step: number, settings: ReplaySettings, recording: ReplayRecording): ReplayVerdict {
  const own = (r: ToolCallRecord): ReplayVerdict => ({ kind: 'record', record: r });
  const base = { id: p.call.id, name: p.call.name, arguments: p.args, durationMs: 0 };
  if (p.kind === 'refuse') return own(plannedRecord(p));
  if (p.kind === 'transfer') return own(transferRecord(p));
  if (p.kind === 'spawn') return own({ ...base, outcome: 'forbidden', observation: 'Not started: a replay starts no sub-agent runs.' });
  if (p.kind === 'await_approval') {
    const found = recording.approvals.get(callKey(p.call.name, p.args));
    const match = found?.find((m) => m.approval.step === step) ?? found?.[0];
    if (match) {
      // What the original ran, edited arguments included: the call as the approver let it through.
      const { approvalId: _original, ...record } = match.record;
      return own({ ...record, id: p.call.id, durationMs: 0, source: 'recorded' });
    }
    const need = p.newApproval;
    if (!need) return own(plannedRecord(p));
    return own({
      ...base,
      outcome: 'rejected',
      observation: `Not executed: rejected (reason: replay). The original run never had this call approved; it would need approval (risk ${need.risk}, role ${need.requiredRole}).`,
      wouldNeedApproval: { risk: need.risk, requiredRole: need.requiredRole },
    });
  }
  const match = nearest(recording.calls.get(callKey(p.call.name, p.args)), step);
  if (match) return own({ ...match.record, ...base, source: 'recorded' });
  if (p.tool.kind === 'read') {
    if (settings.liveReads) return { kind: 'live' };
    return own({
      ...base,
      outcome: 'error',
      source: 'not_recorded',
      observation: `not_recorded: the original run never called ${p.call.name} with these arguments, so this replay has no result for it.`,
    });
  }
  return own({
    ...base,
    outcome: 'ok',
    source: 'simulated',
    observation: `Simulated: a replay never executes write tools. ${p.call.name} was not executed (the original run never made this call).`,
  });
}

/**
 * The agent as a replay runs it: its instructions and model as the replay overrides them, and
 * a budget that runs out fails the replay instead of asking a person (a replay asks nobody).
 */
export function replayProfile(run: Pick<RunRecord, 'mode' | 'replay'>, profile: AgentProfile): AgentProfile {
  if (run.mode !== 'replay') return profile;
  const r = run.replay;
  return {
    ...profile,
    ...(r?.instructions ? { instructions: r.instructions } : {}),
    ...(r?.model ? { models: [r.model] } : {}),
    ...(profile.onBudget === 'ask' ? { onBudget: 'fail' as const } : {}),
  };
}
