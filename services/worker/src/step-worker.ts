import {
  bullConnection,
  createStepEngine,
  failJob,
  HOUSEKEEPING_QUEUE,
  InvalidJobError,
  type ModelGateway,
  queuePrefix,
  runJob,
  SCHEDULE_QUEUE,
  SCHEDULE_QUEUE_PREFIX,
  STEP_QUEUE,
  stepQueuePrefix,
  UnrecoverableJobError,
  type WorkerRuntime,
  workerJobs,
  workerShards,
} from '@rein/core/worker';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { watchFetchLoops } from './fetch-watchdog.js';

/** The workers of one process, one per step-queue shard it consumes (and one per housekeeping shard), as one thing to run and close. */
export interface StepWorkers {
  workers: Worker[];
  isRunning(): boolean;
  close(force?: boolean): Promise<void>;
}

/**
 * The BullMQ workers: one job = one ReAct step; one Worker per consumed shard, each
 * with `queue.workerConcurrency` (the model bulkhead still caps the process's model calls).
 * Every job runs by the worker's job table (`workerJobs`: the features' jobs merged; a
 * step's delays and final failures are the step engine's, step/step-jobs.ts).
 */
export function createStepWorker(rt: WorkerRuntime, model: ModelGateway): StepWorkers {
  const { options, logger } = rt;
  const { queue } = options;
  const { steps } = createStepEngine(rt, { model });
  const jobs = workerJobs(rt, steps);

  const processJob = async (job: Job, token?: string) => {
    try {
      return await runJob(jobs, job.name, job.data, { job, token });
    } catch (err) {
      // An unknown or malformed job cannot succeed on a retry.
      if (err instanceof InvalidJobError) throw new UnrecoverableJobError(err);
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
