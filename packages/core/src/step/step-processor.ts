import type { Approval, Decision, RunReason, RunRecord } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import type { ModelLease } from '../adapters/model/model-gateway.js';
import type { StepJob } from '../adapters/queue/job-catalog.js';
import { runEvent } from '../policy/run/run-event.js';
import { replayProfile, replayStep } from '../policy/step/replay-policy.js';
import { afterReply, afterTools, deadlineReason, gate, replayStopped } from '../policy/step/step-policy.js';
import { StaleStepError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { admit } from './admit.js';
import { createAgentViews } from './agent-views.js';
import { createStepApply } from './apply-step.js';
import { callModel } from './call-model.js';
import { placeRun } from './place.js';
import { planStep } from './plan-calls.js';
import { recordingFor, replayCalls, runCalls } from './run-calls.js';
import { runLogger, type StepOutcome, type StepProcessorDeps, stepClock } from './step-deps.js';
import type { BreakerStates } from './tool-executor.js';

export type { GuardLimits, StepOutcome, StepProcessorDeps, StepVersions } from './step-deps.js';

/**
 * One ReAct step per call, in phases (docs/design.md, "The phases of a step"): read and
 * triage (one round trip that also takes the model's fleet lease and sends `step.started`,
 * then the pure `gate`), place the run on its version's workers,
 * admit it (tree, budget, input, start), call the model and journal its reply, plan the
 * calls, run them (a replay's get what its original recorded), conclude (the pure
 * `afterTools`) and apply the Transition. Safe to run any number of times for the same
 * step, concurrently or after a crash.
 */
export function createStepProcessor(deps: StepProcessorDeps) {
  const clock = stepClock(deps.now);
  const views = createAgentViews(deps.tools, deps.agents);
  const apply = createStepApply({ ...deps, clock });
  const phase = { ...deps, clock, views, apply };

  /**
   * Read and triage, place, admit, call the model: the step's decision, then `act` on it.
   * `lease`: the model's fleet lease, asked for with the read; `announce`: send `step.started` with it.
   */
  async function attempt(job: StepJob, lease: ModelLease | undefined, announce: boolean): Promise<StepOutcome> {
    // A job that names the run's tenant has its quota read beside the run (another slot, same round trip).
    const quota = job.tenantId ? deps.quotas.usageRead(job.tenantId) : undefined;
    const reading = deps.store.readStep(job.runId, job.step, quota ? [quota.command] : []);
    // A live-only event, sent with the read (one round trip): it says a worker took the step up, before knowing whether it runs.
    const started = announce
      ? deps.store
          .appendEvent(runEvent('step.started', job.runId, job.step), true)
          .catch((err: Error) => deps.logger.warn({ runId: job.runId, err: err.message }, 'step.started not written'))
      : undefined;
    const [read] = await Promise.all([reading, started, lease?.answered]);
    const g = gate(read.run, job.step, read.approvals, read.decision, read.children);
    // Only a step that asks the model keeps the lease.
    if (g.kind !== 'decide') lease?.release();
    if (g.kind === 'skip' || !read.run) return 'skipped';
    if (g.kind !== 'already_committed') {
      const placed = await placeRun(phase, read.run, read.approvals);
      if (placed === 'rerouted') return 'rerouted';
      if (placed === 'moved') return attempt(job, lease, false); // read again, as the new version's
    }
    if (g.kind === 'already_committed' || g.kind === 'parked') {
      await deps.applier.ensureNext(read.run, g.kind === 'parked' ? read.approvals : undefined);
      return g.kind === 'parked' ? 'skipped' : 'already_committed';
    }
    const log = runLogger(deps.logger, read.run);
    // A replay runs its agent with the instructions and model it overrides.
    const profile = replayProfile(read.run, deps.agents.get(read.run.agent));
    // A decision journaled by an earlier attempt is acted on as it stands: the model is not asked twice.
    if (g.kind === 'act') return act(read.run, profile, g.decision, read.approvals, log, performance.now());
    const quotaExhausted = quota && job.tenantId === read.run.tenantId ? quota.exhausted(read.reads[0]) : undefined;
    const admission = await admit(phase, read, read.run, profile, quotaExhausted, log);
    if (admission.kind === 'ended') return admission.outcome;
    const made = await callModel(phase, admission.run, profile, read.messages, log, admission.budget, lease);
    if (!made) return admission.outOfTokens();
    // A step's duration is its model call (journaled) plus what happens from here on.
    return act(made.run, profile, made.decision, read.approvals, log, performance.now(), made.breakerStates);
  }

  /** Plan, run the calls, conclude, apply. */
  async function act(
    run: RunRecord,
    profile: AgentProfile,
    decision: Decision,
    approvals: Approval[],
    log: Logger,
    started: number,
    breakerStates?: BreakerStates,
  ): Promise<StepOutcome> {
    const plan = await planStep(phase, run, profile, decision, approvals, started);
    if (plan.kind === 'concluded') return apply.applied(run, plan.transition, log);
    const { calls, facts } = plan;
    if (run.mode === 'replay') {
      const replayed = replayStep(run, calls, await recordingFor(deps.store, run));
      const records = (await replayCalls(deps, calls, replayed.verdicts, breakerStates)).map((r) => r.record);
      const t = replayed.stop ? replayStopped(facts(), records) : afterTools(facts(), records, []);
      return apply.afterTools(run, t, records, log);
    }
    const results = await runCalls(phase, run, calls, plan.earlier, breakerStates, afterReply(facts()));
    const records = results.map((r) => r.record);
    const newApprovals = results.flatMap((r) => (r.newApproval ? [r.newApproval] : []));
    return apply.afterTools(run, afterTools(facts(), records, newApprovals), records, log);
  }

  async function process(job: StepJob): Promise<StepOutcome> {
    // Asked for now, so it leaves with the read; a step that does not call the model gives it back.
    const lease = deps.model.lease?.(deps.modelTimeoutMs);
    try {
      return await attempt(job, lease, true);
    } catch (err) {
      if (!(err instanceof StaleStepError)) throw err;
      // Someone else committed first (I2): just make sure the run moves on.
      deps.logger.info({ runId: job.runId, step: job.step }, 'step already committed by another attempt');
      const current = await deps.store.get(job.runId);
      if (current) await deps.applier.ensureNext(current);
      return 'already_committed';
    } finally {
      lease?.release();
    }
  }

  return {
    process,
    fail: apply.fail,
    ensureNext: deps.applier.ensureNext,
    deadlineReason: async (runId: string): Promise<RunReason> => deadlineReason(await deps.store.waitingOn(runId)),
  };
}

export type StepProcessor = ReturnType<typeof createStepProcessor>;
