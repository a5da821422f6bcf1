import { type ConnectionOptions, type JobsOptions, Queue } from 'bullmq';
import { z } from 'zod';
import { QUEUE_PREFIX } from '../keys.js';

export const STEP_QUEUE = 'rein-steps';

export const stepJobSchema = z.object({ runId: z.string().min(1), step: z.number().int().min(0) });
export type StepJob = z.infer<typeof stepJobSchema>;

/**
 * Every job Rein enqueues: name → payload schema and deterministic id (invariant 1).
 * Both names run the same idempotent step processor; "resume" exists so that a
 * decision's resume job never collides with the step's original job id.
 */
export const jobCatalog = {
  step: { schema: stepJobSchema, id: (j: StepJob) => `${j.runId}-${j.step}` },
  resume: { schema: stepJobSchema, id: (j: StepJob) => `${j.runId}-${j.step}-resume` },
} as const;
export type JobName = keyof typeof jobCatalog;

export function stepJobOptions(attempts: number): JobsOptions {
  return {
    attempts,
    // Open breakers, full bulkheads and flaky models delay the step; jitter spreads the herd.
    backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 },
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  };
}

/** Parses a dequeued payload; a malformed one is a bug upstream, not something to retry. */
export function parseJob(name: string, data: unknown): { name: JobName; payload: StepJob } {
  if (!(name in jobCatalog)) throw new Error(`unknown job name "${name}"`);
  return { name: name as JobName, payload: jobCatalog[name as JobName].schema.parse(data) };
}

/** Enqueues steps with deterministic ids: adding the same step twice is a no-op. */
export class StepScheduler {
  readonly queue: Queue;

  constructor(
    connection: ConnectionOptions,
    private readonly attempts: number,
  ) {
    this.queue = new Queue(STEP_QUEUE, { connection, prefix: QUEUE_PREFIX });
  }

  async enqueue(name: JobName, job: StepJob): Promise<void> {
    const payload = jobCatalog[name].schema.parse(job);
    await this.queue.add(name, payload, { ...stepJobOptions(this.attempts), jobId: jobCatalog[name].id(payload) });
  }

  close() {
    return this.queue.close();
  }
}
