import { type Job, UnrecoverableError } from 'bullmq';
import { z } from 'zod';
import { ReinError } from '../../shared/errors.js';
import type { AUDIT_CHECKPOINT, DEADLINE_SWEEP, JobName, JobPayload, REAPER } from './job-catalog.js';
import type { FireJob, SCHEDULE_FIRE } from './schedule-queue.js';

/** Every job name a worker takes: the catalog's enqueued jobs, the housekeeping passes, and schedule firings. */
export type WorkerJobName =
  | JobName
  | typeof DEADLINE_SWEEP.name
  | typeof REAPER.name
  | typeof AUDIT_CHECKPOINT.name
  | typeof SCHEDULE_FIRE.name;
/** A housekeeping pass carries nothing: its scheduler's data is `{}`, read as `null`. A firing names its schedule. */
export type WorkerJobPayload<N extends WorkerJobName> = N extends JobName
  ? JobPayload<N>
  : N extends typeof SCHEDULE_FIRE.name
    ? FireJob
    : null;

/** A job no worker can take: an unknown name or a malformed payload is a bug upstream, not something to retry. */
export class InvalidJobError extends ReinError {
  override readonly name = 'InvalidJobError';
  constructor(message: string) {
    super('invalid_job', message);
  }
}

/** What BullMQ hands a job's handler beside its payload. */
export interface Dequeued {
  job: Job;
  token: string | undefined;
}

/** A non-retryable job failure, for BullMQ; it keeps the typed error so a run's reason comes from it. */
export class UnrecoverableJobError extends UnrecoverableError {
  constructor(readonly error: ReinError) {
    super(`${error.code}: ${error.message}`);
  }
}

/** How one job kind runs. `J` is what the queue hands over beside the payload (the BullMQ job, its lock token). */
export interface JobHandler<P, J> {
  schema: z.ZodType<P>;
  run(payload: P, job: J): Promise<string>;
  /** What the job's final failure (its last attempt, or a non-retryable error) does; none: nothing beyond the failed job. */
  onFinalFailure?: (payload: P, err: Error) => Promise<void>;
}

/** Job name → handler; a mapped type over every worker job name, so a missing entry is a type error. */
export type JobTable<J> = { [N in WorkerJobName]: JobHandler<WorkerJobPayload<N>, J> };

/** The handlers a feature owns: its slice of the worker's table (process/worker-jobs.ts merges them). */
export type JobHandlers<N extends WorkerJobName, J = Dequeued> = Pick<JobTable<J>, N>;

/** The handler of `name` and its parsed payload; throws InvalidJobError naming what is wrong. */
export function takeJob<J>(table: JobTable<J>, name: string, data: unknown): { handler: JobHandler<unknown, J>; payload: unknown } {
  if (!Object.hasOwn(table, name)) throw new InvalidJobError(`unknown job name "${name}"`);
  const handler = table[name as WorkerJobName] as JobHandler<unknown, J>;
  const parsed = handler.schema.safeParse(data);
  if (!parsed.success) throw new InvalidJobError(`malformed "${name}" job: ${z.prettifyError(parsed.error)}`);
  return { handler, payload: parsed.data };
}

/** Runs a dequeued job by its table entry. */
export async function runJob<J>(table: JobTable<J>, name: string, data: unknown, job: J): Promise<string> {
  const { handler, payload } = takeJob(table, name, data);
  return handler.run(payload, job);
}

/** Does what a job's final failure does, by its table entry. */
export async function failJob<J>(table: JobTable<J>, name: string, data: unknown, err: Error): Promise<void> {
  const { handler, payload } = takeJob(table, name, data);
  await handler.onFinalFailure?.(payload, err);
}
