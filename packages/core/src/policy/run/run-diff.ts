import type { Approval } from '@rein/contract';
import { type DiffCall, type RunDiff, type RunRecord, type StepRecord, TERMINAL_STATUSES } from '@rein/contract';
import { canonicalJson, hashArguments } from '../app/argument-hash.js';

/** One side of a diff: a run and its committed steps. */
export interface DiffSide {
  run: RunRecord;
  steps: readonly StepRecord[];
}

const callsOf = (step: StepRecord): DiffCall[] =>
  step.toolCalls.map((c) => ({
    step: step.index,
    name: c.name,
    arguments: c.arguments,
    argsHash: hashArguments(c.arguments),
    outcome: c.outcome,
    ...(c.source ? { source: c.source } : {}),
  }));

const shape = (calls: readonly DiffCall[]) => calls.map((c) => `${c.name}\n${c.argsHash}`).join('\n\n');

/** The calls of `a` that `b` has no match for (as a multiset: each of b's calls matches once). */
function unmatched(a: readonly DiffCall[], b: readonly DiffCall[]): DiffCall[] {
  const left = new Map<string, number>();
  for (const c of b) left.set(shape([c]), (left.get(shape([c])) ?? 0) + 1);
  return a.filter((c) => {
    const n = left.get(shape([c])) ?? 0;
    if (n === 0) return true;
    left.set(shape([c]), n - 1);
    return false;
  });
}

/**
 * What a replay did differently from its original (pure): structure first — step by step,
 * the sequence of tool calls with their arguments by canonical hash, and whether each run
 * ended at that step — then text (thoughts, the final answer). `divergedAtStep` is the
 * trace index of the first structural difference, else of the first differing text; of a
 * replay still running, only among the steps it has committed.
 */
export function diffRuns(original: DiffSide, replay: DiffSide, originalApprovals: readonly Approval[]): RunDiff {
  const count = Math.max(original.steps.length, replay.steps.length);
  // A replay still running has not reached its later steps yet: they are not a divergence (yet).
  const finished = TERMINAL_STATUSES.includes(replay.run.status);
  const byIndex = (side: DiffSide) => new Map(side.steps.map((s) => [s.index, s]));
  const [o, r] = [byIndex(original), byIndex(replay)];
  const steps: RunDiff['steps'] = [];
  const changedArguments: RunDiff['toolCalls']['changedArguments'] = [];
  let structural: number | null = null;
  let textual: number | null = null;
  for (let index = 0; index < count; index++) {
    const [os, rs] = [o.get(index), r.get(index)];
    const [oc, rc] = [os ? callsOf(os) : [], rs ? callsOf(rs) : []];
    const same = os !== undefined && rs !== undefined && shape(oc) === shape(rc);
    if (!same && structural === null && (rs !== undefined || finished)) structural = index;
    if (same && textual === null && os?.thought !== rs?.thought) textual = index;
    oc.forEach((c, i) => {
      const other = rc[i];
      if (other && other.name === c.name && other.argsHash !== c.argsHash)
        changedArguments.push({ step: index, name: c.name, original: c.arguments, replay: other.arguments });
    });
    steps.push({
      index,
      original: os ? { thought: os.thought, calls: oc } : null,
      replay: rs ? { thought: rs.thought, calls: rc } : null,
      same,
    });
  }
  const [allO, allR] = [original.steps.flatMap(callsOf), replay.steps.flatMap(callsOf)];
  const [oa, ra] = [original.run.finalAnswer ?? null, replay.run.finalAnswer ?? null];
  const answerSame = oa === ra;
  const outputSame = canonicalJson(original.run.output ?? null) === canonicalJson(replay.run.output ?? null);
  const statusSame = original.run.status === replay.run.status && (original.run.reason ?? null) === (replay.run.reason ?? null);
  if (finished && structural === null && !answerSame && textual === null) textual = Math.max(0, count - 1);
  const identical = finished && structural === null && textual === null && answerSame && outputSame && statusSame;
  return {
    replayOf: original.run.id,
    identical,
    divergedAtStep: structural ?? textual ?? (identical || !finished || statusSame ? null : Math.max(0, count - 1)),
    steps,
    toolCalls: { added: unmatched(allR, allO), removed: unmatched(allO, allR), changedArguments },
    approvals: {
      original: originalApprovals.map((a) => ({ step: a.step, toolName: a.toolName, status: a.status, risk: a.risk })),
      wouldNeed: replay.steps.flatMap((s) =>
        s.toolCalls.flatMap((c) =>
          c.wouldNeedApproval ? [{ step: s.index, toolName: c.name, arguments: c.arguments, ...c.wouldNeedApproval }] : [],
        ),
      ),
    },
    usage: { original: original.run.usage, replay: replay.run.usage },
    costUsd: { original: original.run.costUsd, replay: replay.run.costUsd },
    finalAnswer: { original: oa, replay: ra, same: answerSame },
    output: { same: outputSame },
    status: replay.run.status,
  };
}
