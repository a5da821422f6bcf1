import type { Versioning } from '@rein/contract';

/**
 * What routes a run's job to the workers of a version: the run's `appVersion` and its
 * agent's `versioning` (`upgrade` follows the current version). Taken from the run record
 * the enqueuer holds (`jobRoute`), so routing reads nothing more; not part of the payload
 * (the worker checks the run record it reads anyway).
 */
export type JobRoute = { appVersion?: string; versioning?: Versioning };

export interface EnqueueOptions {
  delayMs?: number;
  /** The run's, for a job of a run on a version (absent: this process's version's queue). */
  route?: JobRoute;
}

/** A delayed expiry timer of a run's step, as its job names it. */
export interface ExpiryTimer {
  runId: string;
  step: number;
  at: number;
}

/**
 * The queue of a run's jobs (steps, resumes, timers, undos, archive jobs) as step/ and
 * features use it. `Jobs` maps each job's name to its payload (adapters/queue/job-catalog.ts
 * is the catalog). A job's id comes from its payload: one enqueued twice is there once.
 * Implemented by StepScheduler (BullMQ) and, in memory, by testing/memory-job-queue.ts.
 */
export interface JobQueue<Jobs> {
  enqueue<N extends keyof Jobs & string>(name: N, job: Jobs[N], opts?: EnqueueOptions): Promise<void>;
  /** Removes a delayed expiry timer, best effort: one running or gone is left alone. */
  cancelExpiry(job: ExpiryTimer): Promise<void>;
  /** The jobs waiting for the workers of `version` (waiting, delayed or running). */
  jobCounts(version: string): Promise<number>;
  /** Moves the jobs waiting for `from`'s workers to `to`'s (not running ones); returns how many moved. */
  moveJobs(from: string, to: string): Promise<number>;
}
