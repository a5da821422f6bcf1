import type { RunReason } from '@rein/contract';
import { DelayedError, type Job } from 'bullmq';
import { repairJobSchema, type StepJob, stepJobSchema, wakeJobSchema } from '../adapters/queue/job-catalog.js';
import { type Dequeued, type JobHandlers, UnrecoverableJobError } from '../adapters/queue/job-table.js';
import { stepSpan } from '../adapters/tracing/rein-spans.js';
import type { RunRepository } from '../policy/ports/run-repository.js';
import { isDelaying, ModelUnavailableError, ReinError, terminalReason } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';
import type { StepProcessor } from './step-processor.js';

/** Exponential backoff with full jitter between half and all of the step, capped at 30 s. */
export function backoffMs(attempt: number): number {
  const ceiling = Math.min(30_000, 500 * 2 ** Math.min(attempt, 10));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

export interface StepJobsDeps {
  steps: StepProcessor;
  store: RunRepository;
  metrics: Metrics;
  logger: Logger;
  /** The app version this worker runs, on the step's span. */
  version: string;
}

/**
 * The step engine's jobs (step, resume, wake, repair): one ReAct step each, in its span. A
 * busy or broken dependency (open breaker, full bulkhead, model down) puts the step back
 * on the queue for later without spending an attempt, until the run's deadline; other
 * failures are retried by BullMQ, and a non-retryable error or the last attempt ends the
 * run with a reason.
 */
export function stepJobs(deps: StepJobsDeps): JobHandlers<'step' | 'resume' | 'wake' | 'repair'> {
  const { steps, store, metrics, logger } = deps;

  /** Puts the step back for later, or ends the run if "later" is past its deadline. */
  async function delay(job: Job, token: string | undefined, payload: StepJob, err: ReinError): Promise<string> {
    const wait = err.retryAfterMs ?? backoffMs(job.attemptsStarted);
    // The model gateway reports every model trouble (breaker, bulkhead, errors) as model_unavailable.
    const reason: RunReason = err instanceof ModelUnavailableError ? 'model_unavailable' : 'deadline';
    const run = await store.get(payload.runId);
    if (reason === 'model_unavailable') await store.markWaiting(payload.runId, reason);
    if (run && Date.now() + wait >= Date.parse(run.deadlineAt)) {
      await steps.fail(payload.runId, reason, err.message, (r) => r.step === payload.step);
      return 'failed';
    }
    metrics.stepDelays.inc({ cause: err.code });
    logger.info({ runId: payload.runId, step: payload.step, cause: err.code, waitMs: wait }, 'step delayed');
    await job.moveToDelayed(Date.now() + wait, token);
    throw new DelayedError();
  }

  /** One step (step, resume, wake or repair): the processor, in the step's span, delayed when a dependency is busy. */
  const runStep =
    (name: 'step' | 'resume' | 'wake' | 'repair') =>
    async (payload: StepJob, { job, token }: Dequeued) => {
      metrics.jobWait.observe({ job: name }, Math.max(0, (job.processedOn ?? Date.now()) - job.timestamp - (job.delay ?? 0)) / 1000);
      return stepSpan(
        name,
        payload,
        async () => {
          const started = performance.now();
          try {
            const outcome = await steps.process(payload);
            // Only a step that was delayed can carry the "waiting on the model" marker: clear it off the normal path.
            if (job.attemptsStarted > 1) await store.clearWaiting(payload.runId);
            metrics.stepDuration.observe({ outcome }, (performance.now() - started) / 1000);
            return outcome;
          } catch (err) {
            if (isDelaying(err)) return delay(job, token, payload, err);
            if (err instanceof ReinError && !err.retryable) throw new UnrecoverableJobError(err);
            logger.warn(
              { runId: payload.runId, step: payload.step, attempt: job.attemptsMade + 1, err: (err as Error).message },
              'step failed; will retry',
            );
            throw err;
          }
        },
        deps.version,
      );
    };
  /** A step's final failure ends its run, with the reason its error names (if the run is still at that step). */
  const endRun = async ({ runId, step }: StepJob, err: Error) => {
    const cause = err instanceof UnrecoverableJobError ? err.error : err;
    await steps.fail(runId, terminalReason(cause), err.message, (run) => run.step === step);
  };

  return {
    step: { schema: stepJobSchema, run: runStep('step'), onFinalFailure: endRun },
    resume: { schema: stepJobSchema, run: runStep('resume'), onFinalFailure: endRun },
    wake: { schema: wakeJobSchema, run: runStep('wake'), onFinalFailure: endRun },
    repair: { schema: repairJobSchema, run: runStep('repair'), onFinalFailure: endRun },
  };
}
