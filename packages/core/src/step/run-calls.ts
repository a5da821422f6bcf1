import type { RunRecord } from '@rein/contract';
import pLimit from 'p-limit';
import { toolSpan } from '../adapters/tracing/genai.js';
import type { RunRepository } from '../policy/ports/run-repository.js';
import type { TurnJournal } from '../policy/ports/turn-journal.js';
import { type PlannedCall, transferRecord } from '../policy/step/call-plan.js';
import { questionApproval } from '../policy/step/input-approvals.js';
import type { EarlierCall } from '../policy/step/loop-guard.js';
import { type ReplayVerdict, recordingOf } from '../policy/step/replay-policy.js';
import type { StepClock, StepProcessorDeps } from './step-deps.js';
import type { BreakerStates, ToolCallResult } from './tool-executor.js';

export type RunCallsDeps = Pick<
  StepProcessorDeps,
  'store' | 'tools' | 'executeTool' | 'feed' | 'toolConcurrency' | 'spawnChild' | 'approvalTtlMs' | 'escalation'
> & {
  clock: StepClock;
};

/** A read tool asked again with the same arguments is answered from its earlier result. */
async function fromEarlier(
  store: RunRepository & TurnJournal,
  runId: string,
  [step, id]: EarlierCall,
  callId: string,
): Promise<ToolCallResult | null> {
  const earlier = (await store.stepRecord(runId, step))?.toolCalls.find((r) => r.id === id);
  return earlier ? { record: { ...earlier, id: callId, durationMs: 0, fromSnapshot: true } } : null;
}

/**
 * Runs the planned calls, at most toolConcurrency at a time; a read tool asked again with
 * the same arguments is answered from its earlier result instead. An uncertain effect is
 * told to the tenant's feed at once.
 */
export async function runCalls(
  deps: RunCallsDeps,
  run: RunRecord,
  planned: PlannedCall[],
  earlierCalls: ReadonlyMap<number, EarlierCall>,
  breakerStates: BreakerStates | undefined,
  /** The run as its children see it: its step's reply paid for. */
  parent: RunRecord,
): Promise<ToolCallResult[]> {
  const limit = pLimit(deps.toolConcurrency);
  const siblings = planned.filter((p) => p.kind === 'spawn').length;
  const results = await Promise.all(
    planned.map(async (p, index): Promise<ToolCallResult> => {
      if (p.kind === 'transfer') return { record: transferRecord(p) };
      if (p.kind === 'spawn') {
        const spawn = deps.spawnChild;
        if (!spawn) {
          const observation = 'Not started: this process cannot start sub-agent runs.';
          return { record: { id: p.call.id, name: p.call.name, arguments: p.args, outcome: 'forbidden', observation, durationMs: 0 } };
        }
        return limit(() => toolSpan(p.call, undefined, () => spawn(parent, p, siblings)));
      }
      const earlier = earlierCalls.get(index);
      if (earlier && deps.tools.get(p.call.name)?.kind === 'read') {
        const answered = await fromEarlier(deps.store, run.id, earlier, p.call.id);
        if (answered) return answered;
      }
      const result = await limit(() => deps.executeTool(p, breakerStates));
      if (!result.asked || p.kind !== 'run') return result;
      // The call's work asks a person: its question becomes the call's next approval, which parks the step.
      const approval = questionApproval({
        run,
        index,
        toolCallId: p.call.id,
        tool: p.tool,
        asked: result.asked,
        now: deps.clock.now(),
        approvalTtlMs: deps.approvalTtlMs,
        ...(deps.escalation ? { escalation: deps.escalation } : {}),
      });
      const observation = `Waiting for a person to answer ${p.call.name}'s question (${approval.id}).`;
      return { record: { ...result.record, approvalId: approval.id, observation }, newApproval: approval };
    }),
  );
  for (const r of results.filter((x) => x.record.outcome === 'uncertain')) {
    await deps.feed.publish(run.tenantId, {
      type: 'effect.uncertain',
      runId: run.id,
      step: run.step,
      toolCallId: r.record.id,
      tool: r.record.name,
      at: deps.clock.iso(),
    });
  }
  return results;
}

/** The original's calls and approvals, as a replay matches its own calls against them. */
export async function recordingFor(store: RunRepository & TurnJournal, run: RunRecord) {
  const original = run.replayOf ?? '';
  const [steps, approvals] = await Promise.all([store.steps(original), store.approvals(original)]);
  return recordingOf(steps, approvals);
}

/**
 * A replay's calls (policy/step/replay-policy.ts): each gets what its original recorded,
 * and only a read the caller asked to run live runs its tool. None reaches the world.
 */
export async function replayCalls(
  deps: Pick<RunCallsDeps, 'executeTool' | 'toolConcurrency'>,
  planned: PlannedCall[],
  verdicts: readonly ReplayVerdict[],
  breakerStates: BreakerStates | undefined,
): Promise<ToolCallResult[]> {
  const limit = pLimit(deps.toolConcurrency);
  return Promise.all(
    planned.map(async (p, index): Promise<ToolCallResult> => {
      const verdict = verdicts[index] as ReplayVerdict;
      if (verdict.kind === 'record') return { record: verdict.record };
      return limit(async () => ({ record: { ...(await deps.executeTool(p, breakerStates)).record, source: 'live' as const } }));
    }),
  );
}
