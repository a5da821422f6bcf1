import { type RunReason, type RunRecord, TERMINAL_STATUSES, type ToolCallRecord } from '@rein/contract';
import { approvalEvent } from '../adapters/redis/approval-feed.js';
import { cancelRun, retryOnStale } from '../policy/run/run-transitions.js';
import { failRun, type Transition } from '../policy/step/step-policy.js';
import { StaleStepError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { runLogger, type StepClock, type StepOutcome, type StepProcessorDeps } from './step-deps.js';

export type ApplyStepDeps = Pick<StepProcessorDeps, 'store' | 'applier' | 'tools' | 'agents' | 'masker' | 'logger' | 'versions'> & {
  clock: StepClock;
};

const OUTCOME = { continue: 'continued', park: 'parked', wait: 'waiting', finish: 'finished' } as const;

/** Outcomes of a write call whose effect happened or may have happened. */
const EFFECT_OUTCOMES: readonly ToolCallRecord['outcome'][] = ['ok', 'error', 'uncertain'];

/** The last phase: a step's Transition takes effect through the one applier. */
export function createStepApply(deps: ApplyStepDeps) {
  const { applier, clock } = deps;
  const mask = (text: string) => deps.masker.maskText(text);

  /** The step record says which version ran it: the trace shows where a run changed version. */
  const stamped = (t: Transition): Transition =>
    deps.versions && t.change.step ? { ...t, change: { ...t.change, step: { ...t.change.step, appVersion: deps.versions.own } } } : t;

  async function applied(run: RunRecord, t: Transition, log: Logger): Promise<StepOutcome> {
    await applier.apply(run, { kind: 'step', transition: stamped(t), log });
    return OUTCOME[t.kind];
  }

  return {
    applied,

    /** Applies the step's conclusion after its calls ran. */
    async afterTools(run: RunRecord, t: Transition, records: ToolCallRecord[], log: Logger): Promise<StepOutcome> {
      try {
        return await applied(run, t, log);
      } catch (err) {
        // The run finished (cancelled, past its deadline) while its writes ran: the terminal commit dropped
        // the ledger, so what they did is recorded in the trace now, where the saga and the people find it.
        const wrote = records.some((r) => deps.tools.get(r.name)?.kind === 'write' && EFFECT_OUTCOMES.includes(r.outcome));
        if (err instanceof StaleStepError && wrote && t.change.step && (await applier.recordAfterFinish(run.id, t.change.step))) {
          log.warn({ step: run.step }, "tool calls recorded after the run's finish");
        }
        throw err;
      }
    },

    /** A sub-agent's run inherits its ancestor's end: cancelled, its approvals withdrawn. */
    async cancelled(run: RunRecord, by: string, log: Logger): Promise<StepOutcome> {
      const { change, withdrawn } = cancelRun(run, await deps.store.approvals(run.id), by, clock.iso());
      await applier.apply(run, { kind: 'cancel', change, followUps: { feed: withdrawn.map((a) => approvalEvent(a, true)) } });
      log.info({ by }, 'sub-agent run cancelled: an ancestor ended');
      return 'finished';
    },

    /**
     * Ends a run that can no longer make progress (its step ran out of attempts, hit a
     * non-retryable error, or passed its deadline), so that nothing hangs (I9).
     */
    async fail(runId: string, reason: RunReason, detail: string, onlyIf: (run: RunRecord) => boolean = () => true): Promise<boolean> {
      try {
        return await retryOnStale(async () => {
          const run = await deps.store.get(runId);
          if (!run || TERMINAL_STATUSES.includes(run.status) || !onlyIf(run)) return false;
          const transition = failRun(run, reason, deps.agents.handoffAnswer(run.agent), mask, clock.iso(), {
            level: 'warn',
            msg: 'run failed',
            fields: { reason, detail },
          });
          await applier.apply(run, { kind: 'step', transition: stamped(transition), log: runLogger(deps.logger, run) });
          return true;
        });
      } catch (err) {
        if (err instanceof StaleStepError) return false; // others keep moving it; they end it or we try again later
        throw err;
      }
    },
  };
}

export type StepApply = ReturnType<typeof createStepApply>;
