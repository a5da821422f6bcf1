import type { RunReason } from '@rein/contract';
import { ReinError } from '@rein/core';
import {
  AUDIT_CHECKPOINT,
  admitJobSchema,
  archiveJobSchema,
  bullConnection,
  compensateJobSchema,
  createStepEngine,
  DEADLINE_SWEEP,
  expireJobSchema,
  failJob,
  fireJobSchema,
  fireTimeOf,
  HOUSEKEEPING_QUEUE,
  housekeepingJobSchema,
  InvalidJobError,
  isDelaying,
  type JobTable,
  jobRoute,
  type ModelGateway,
  ModelUnavailableError,
  queuePrefix,
  REAPER,
  reap,
  repairJobSchema,
  runJob,
  SCHEDULE_FIRE,
  SCHEDULE_QUEUE,
  SCHEDULE_QUEUE_PREFIX,
  STEP_QUEUE,
  type StepJob,
  slotJobSchema,
  stepJobSchema,
  stepQueuePrefix,
  stepSpan,
  sweepDeadlines,
  terminalReason,
  type WorkerRuntime,
  wakeJobSchema,
  workerShards,
} from '@rein/core/internal';
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq';
import { watchFetchLoops } from './fetch-watchdog.js';

/** What BullMQ hands a job's handler beside its payload. */
interface Dequeued {
  job: Job;
  token: string | undefined;
}

/** A non-retryable job failure, for BullMQ; it keeps the typed error so the run's reason comes from it. */
class UnrecoverableStepError extends UnrecoverableError {
  constructor(readonly error: ReinError) {
    super(`${error.code}: ${error.message}`);
  }
}

/** Exponential backoff with full jitter between half and all of the step, capped at 30 s. */
export function backoffMs(attempt: number): number {
  const ceiling = Math.min(30_000, 500 * 2 ** Math.min(attempt, 10));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** The workers of one process, one per step-queue shard it consumes (and one per housekeeping shard), as one thing to run and close. */
export interface StepWorkers {
  workers: Worker[];
  isRunning(): boolean;
  close(force?: boolean): Promise<void>;
}

/**
 * The BullMQ workers: one job = one ReAct step; one Worker per consumed shard, each
 * with `queue.workerConcurrency` (the model bulkhead still caps the process's model calls).
 * A busy or broken dependency (open breaker, full bulkhead, model down) puts the step
 * back on the queue for later without spending an attempt, until the run's deadline;
 * other failures are retried by BullMQ, and a non-retryable error or the last attempt
 * ends the run with a reason.
 */
export function createStepWorker(rt: WorkerRuntime, model: ModelGateway): StepWorkers {
  const { options, logger } = rt;
  const { queue } = options;
  const { steps } = createStepEngine(rt, { model });

  /** Puts the step back for later, or ends the run if "later" is past its deadline. */
  async function delay(job: Job, token: string | undefined, payload: StepJob, err: ReinError): Promise<string> {
    const wait = err.retryAfterMs ?? backoffMs(job.attemptsStarted);
    // The model gateway reports every model trouble (breaker, bulkhead, errors) as model_unavailable.
    const reason: RunReason = err instanceof ModelUnavailableError ? 'model_unavailable' : 'deadline';
    const run = await rt.store.get(payload.runId);
    if (reason === 'model_unavailable') await rt.store.markWaiting(payload.runId, reason);
    if (run && Date.now() + wait >= Date.parse(run.deadlineAt)) {
      await steps.fail(payload.runId, reason, err.message, (r) => r.step === payload.step);
      return 'failed';
    }
    rt.metrics.stepDelays.inc({ cause: err.code });
    logger.info({ runId: payload.runId, step: payload.step, cause: err.code, waitMs: wait }, 'step delayed');
    await job.moveToDelayed(Date.now() + wait, token);
    throw new DelayedError();
  }

  /** One step (step, resume, wake or repair): the processor, in the step's span, delayed when a dependency is busy. */
  const runStep =
    (name: 'step' | 'resume' | 'wake' | 'repair') =>
    async (payload: StepJob, { job, token }: Dequeued) => {
      rt.metrics.jobWait.observe({ job: name }, Math.max(0, (job.processedOn ?? Date.now()) - job.timestamp - (job.delay ?? 0)) / 1000);
      return stepSpan(
        name,
        payload,
        async () => {
          const started = performance.now();
          try {
            const outcome = await steps.process(payload);
            // Only a step that was delayed can carry the "waiting on the model" marker: clear it off the normal path.
            if (job.attemptsStarted > 1) await rt.store.clearWaiting(payload.runId);
            rt.metrics.stepDuration.observe({ outcome }, (performance.now() - started) / 1000);
            return outcome;
          } catch (err) {
            if (isDelaying(err)) return delay(job, token, payload, err);
            if (err instanceof ReinError && !err.retryable) throw new UnrecoverableStepError(err);
            logger.warn(
              { runId: payload.runId, step: payload.step, attempt: job.attemptsMade + 1, err: (err as Error).message },
              'step failed; will retry',
            );
            throw err;
          }
        },
        rt.version,
      );
    };
  /** A step's final failure ends its run, with the reason its error names (if the run is still at that step). */
  const endRun = async ({ runId, step }: StepJob, err: Error) => {
    const cause = err instanceof UnrecoverableStepError ? err.error : err;
    await steps.fail(runId, terminalReason(cause), err.message, (run) => run.step === step);
  };

  /** Every job this worker takes: what it carries, how it runs, and what its final failure does. */
  const jobs: JobTable<Dequeued> = {
    step: { schema: stepJobSchema, run: runStep('step'), onFinalFailure: endRun },
    resume: { schema: stepJobSchema, run: runStep('resume'), onFinalFailure: endRun },
    wake: { schema: wakeJobSchema, run: runStep('wake'), onFinalFailure: endRun },
    repair: { schema: repairJobSchema, run: runStep('repair'), onFinalFailure: endRun },
    expire: { schema: expireJobSchema, run: async ({ runId, step }) => `expired ${await rt.approvals.expireDue(runId, step)}` },
    escalate: { schema: expireJobSchema, run: async ({ runId, step }) => `escalated ${await rt.approvals.escalateDue(runId, step)}` },
    compensate: {
      schema: compensateJobSchema,
      run: async (payload, { job }) =>
        `compensation ${await rt.compensator.process(payload, job.attemptsMade + 1 >= (job.opts.attempts ?? 1))}`,
      onFinalFailure: (payload, err) => rt.compensator.giveUp(payload, err.message),
    },
    // With the archive off, a job left by a fleet that had it on has nothing to write to: the run stays in Redis until its TTL.
    archive: { schema: archiveJobSchema, run: async ({ runId }) => (rt.archive ? rt.archive.archiving.archive(runId) : 'no archive') },
    // A schedule's firing: its run's id comes from the schedule and the fire time, so a firing taken twice starts one run.
    slot: {
      schema: slotJobSchema,
      run: async ({ tenantId, runId, freed }) => `started ${await rt.fairShare.fill(tenantId, freed ? runId : undefined)}`,
    },
    admit: { schema: admitJobSchema, run: async ({ runId }) => `session ${await rt.sessionQueue.admitNext(runId)}` },
    [SCHEDULE_FIRE.name]: {
      schema: fireJobSchema,
      run: async ({ scheduleId }, { job }) => `firing ${await rt.schedules.fire(scheduleId, fireTimeOf(job))}`,
    },
    [DEADLINE_SWEEP.name]: {
      schema: housekeepingJobSchema,
      run: async () => `failed ${await sweepDeadlines({ store: rt.store, steps, logger })}`,
    },
    // Copies each tenant's decision-log head to the archive and the checkpoint sink (signed with
    // the audit key); a log that no longer holds its last checkpoint was truncated.
    [AUDIT_CHECKPOINT.name]: {
      schema: housekeepingJobSchema,
      run: async () => {
        if (!rt.archive && !options.audit.checkpointSink) return 'no archive, no sink';
        const { written, behind, sinkBehind } = await rt.audit.checkpointAll();
        rt.metrics.auditLogsBehind.set(behind.length);
        rt.metrics.auditSinkBehind.set(sinkBehind.length);
        return `checkpointed ${written}, behind ${behind.length}, sink behind ${sinkBehind.length}`;
      },
    },
    [REAPER.name]: {
      schema: housekeepingJobSchema,
      run: async () => {
        const repaired = await reap({
          store: rt.store,
          queueOf: (run) => rt.scheduler.queueFor(run.id, jobRoute(run)),
          enqueue: rt.enqueue,
          approvals: rt.approvals,
          feed: rt.feed,
          applier: rt.applier,
          metrics: rt.metrics,
          logger,
          quotas: rt.quotas,
          staleMs: options.maintenance.reaperStaleMs,
        });
        const retired = rt.archive ? await rt.archive.archiving.sweep() : 0;
        return `repaired ${repaired}, retired ${retired}`;
      },
    },
  };

  const processJob = async (job: Job, token?: string) => {
    try {
      return await runJob(jobs, job.name, job.data, { job, token });
    } catch (err) {
      // An unknown or malformed job cannot succeed on a retry.
      if (err instanceof InvalidJobError) throw new UnrecoverableStepError(err);
      throw err;
    }
  };

  // One connection for every shard's worker; BullMQ adds a blocking one per worker.
  const connection = bullConnection(options.redis, 'worker', rt.redisOutages, 'step workers');
  // A worker takes its own version's step queues only: a job of a run on another version never reaches it (routing by version).
  const startShard = (shard: number) => {
    const worker = new Worker(STEP_QUEUE, processJob, {
      connection,
      prefix: stepQueuePrefix(shard, rt.version),
      concurrency: queue.workerConcurrency,
      lockDuration: queue.jobLockMs,
      stalledInterval: Math.max(1000, Math.floor(queue.jobLockMs / 2)),
      // A step killed with its worker is picked up again; a step that kills every worker is not.
      maxStalledCount: 3,
    });
    worker.on('error', (err) => rt.redisOutages.error('step workers', err, 'worker error', { shard }));
    worker.on('failed', (job, err) => {
      if (!job || err.name === 'DelayedError') return;
      const final = err instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/.test(err.message);
      if (!final) return;
      failJob(jobs, job.name, job.data, err).catch((e: Error) =>
        logger.error({ job: job.name, err: e.message }, 'could not act on the final failure of a job'),
      );
    });
    return worker;
  };
  const shards = workerShards(queue);
  const workers = shards.map(startShard);
  // Housekeeping has workers of its own (sweep and reap side by side), so full step slots cannot starve it.
  const housekeepers = shards.map((shard) => {
    const worker = new Worker(HOUSEKEEPING_QUEUE, processJob, {
      connection,
      prefix: queuePrefix(shard),
      concurrency: 2,
      lockDuration: queue.jobLockMs,
    });
    worker.on('error', (err) => rt.redisOutages.error('step workers', err, 'housekeeping worker error', { shard }));
    return worker;
  });
  // Schedule firings have a worker of their own too: a firing only submits a run, and full step slots must not delay it.
  const scheduleWorker = new Worker(SCHEDULE_QUEUE, processJob, {
    connection,
    prefix: SCHEDULE_QUEUE_PREFIX,
    concurrency: 4,
    lockDuration: queue.jobLockMs,
  });
  scheduleWorker.on('error', (err) => rt.redisOutages.error('step workers', err, 'schedule worker error'));
  // Exported at 0 from the start, so that the first replacement shows as an increase.
  for (const shard of shards) rt.metrics.fetchLoopRestarts.inc({ shard: String(shard) }, 0);
  rt.scheduler
    .scheduleHousekeeping(
      options.maintenance.sweepIntervalMs,
      options.maintenance.reaperIntervalMs,
      rt.archive || options.audit.checkpointSink ? options.maintenance.auditCheckpointIntervalMs : undefined,
    )
    .catch((err: Error) => logger.error({ err: err.message }, 'could not schedule the housekeeping passes'));

  // A worker whose fetch loop hung is replaced by a fresh one on the same shard. The old
  // one is force-closed: no fetch, no lock renewal, so a step it still had is taken up
  // again as stalled (steps are idempotent). Its close may never finish; it is not awaited.
  const watchdog = watchFetchLoops({
    workers,
    redisReady: () => connection.status === 'ready',
    onWedged: (i) => {
      const shard = shards[i] as number;
      logger.error({ shard }, 'step worker stopped fetching jobs; replacing it');
      rt.metrics.fetchLoopRestarts.inc({ shard: String(shard) });
      const wedged = workers[i] as Worker;
      workers[i] = startShard(shard);
      wedged.close(true).catch((err: Error) => logger.warn({ shard, err: err.message }, 'could not close the replaced worker'));
    },
  });
  return {
    workers,
    isRunning: () => [...workers, ...housekeepers, scheduleWorker].every((w) => w.isRunning()),
    async close(force = false) {
      watchdog.stop();
      await Promise.all([...workers, ...housekeepers, scheduleWorker].map((w) => w.close(force)));
      // Not disconnected here: a closed BullMQ worker may still finish an in-flight command
      // (e.g. rescheduling a job scheduler), and on a closed connection it retries without
      // pause, for ever. Let it end on a live connection and go with the process.
    },
  };
}
