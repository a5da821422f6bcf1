import { type ConnectionOptions, type JobsOptions, Queue } from 'bullmq';
import { z } from 'zod';
import type { JobQueue, JobRoute } from '../../policy/ports/job-queue.js';
import { queuePrefix, stepQueuePrefix } from '../../shared/keys.js';
import { activeTraceparent, traceparentSchema } from '../tracing/trace-context.js';

export const STEP_QUEUE = 'rein-steps';
/**
 * The deadline sweeper and the reaper, one queue per shard beside its step queue (same
 * hash tag), consumed by workers of their own: steps that hold every step slot (a stalled
 * model, a hung tool) cannot keep them from running.
 */
export const HOUSEKEEPING_QUEUE = 'rein-housekeeping';

/**
 * `traceparent`: the trace context the job continues (W3C), so that every span of a run
 * shares its trace id whichever worker takes the step and however long it waited.
 */
/**
 * The route of a finished run's undo (its saga): the current version (promoted, else the
 * newest API's), whichever version ran the run. An undo is an operational repair, done
 * with the tools the fleet runs now, so it never waits for a version no worker runs.
 */
export const UNDO_ROUTE: JobRoute = { versioning: 'upgrade' };

/** The route of a run's jobs, from its record. */
export const jobRoute = (run: { appVersion?: string | undefined; versioning?: string | undefined }): JobRoute => ({
  ...(run.appVersion ? { appVersion: run.appVersion } : {}),
  ...(run.versioning === 'upgrade' ? { versioning: 'upgrade' as const } : {}),
});

export const stepJobSchema = z.object({
  runId: z.string().min(1),
  step: z.number().int().min(0),
  traceparent: traceparentSchema.optional(),
  /** The run's tenant: lets the step read its tenant's quota beside the run, in the same round trip. */
  tenantId: z.string().min(1).optional(),
});
export type StepJob = z.infer<typeof stepJobSchema>;
/** `at`: the expiry instant (ms) this job enforces; one job per distinct instant. */
export const expireJobSchema = stepJobSchema.extend({ at: z.number().int().min(0) });
export type ExpireJob = z.infer<typeof expireJobSchema>;
export const repairJobSchema = stepJobSchema.extend({ version: z.number().int().min(0) });
export type RepairJob = z.infer<typeof repairJobSchema>;

/** `child`: the sub-agent run whose end wakes its parent's waiting step (one job per child, so no wake-up is lost to another's). */
export const wakeJobSchema = stepJobSchema.extend({ child: z.string().min(1) });
export type WakeJob = z.infer<typeof wakeJobSchema>;

/** `round`: the compensation's round (a new request after a declined plan is a new round, so a new job). */
export const compensateJobSchema = z.object({
  runId: z.string().min(1),
  round: z.number().int().min(1),
  traceparent: traceparentSchema.optional(),
});
export type CompensateJob = z.infer<typeof compensateJobSchema>;

/** Writes a finished run to the PostgreSQL archive (runs/run-archiving.ts); any number of them write it once. */
export const archiveJobSchema = z.object({
  runId: z.string().min(1),
  traceparent: traceparentSchema.optional(),
});
export type ArchiveJob = z.infer<typeof archiveJobSchema>;

/**
 * An archive job does not wait out a PostgreSQL outage (it ends, its run left in the
 * backlog, and the reaper enqueues it again once the archive answers); any other failure
 * is retried with backoff (2 s, doubling, about two hours in all), then removed rather
 * than kept failed, so that the reaper's next pass enqueues it again under the same id.
 */
const ARCHIVE_JOB_OPTIONS: JobsOptions = {
  attempts: 12,
  backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 },
  removeOnFail: true,
};

/**
 * A session may have freed up: start the run first in line for it, if the session is free
 * (runs/session-queue.ts). `runId`: the run whose change prompted it (it finished, its undo
 * ended, or it joined the queue); `cause` keeps the three apart, one job each.
 */
export const admitJobSchema = z.object({
  runId: z.string().min(1),
  cause: z.enum(['finished', 'undone', 'queued']),
  traceparent: traceparentSchema.optional(),
});
export type AdmitJob = z.infer<typeof admitJobSchema>;

/**
 * Fair share: a slot of the tenant may be free; start the runs first in its waiting line
 * (runs/fair-share.ts). `runId`: the run that finished (`freed`) or joined the line.
 */
export const slotJobSchema = z.object({
  runId: z.string().min(1),
  tenantId: z.string().min(1),
  freed: z.boolean(),
  traceparent: traceparentSchema.optional(),
});
export type SlotJob = z.infer<typeof slotJobSchema>;

/**
 * Every job Rein enqueues: name → payload schema and deterministic id (I1).
 * Both names run the same idempotent step processor; "resume" exists so that a
 * decision's resume job never collides with the step's original job id.
 */
export const jobCatalog = {
  step: { schema: stepJobSchema, id: (j: StepJob) => `${j.runId}-${j.step}` },
  resume: { schema: stepJobSchema, id: (j: StepJob) => `${j.runId}-${j.step}-resume` },
  /** Fires when the step's approvals expire: enforced by the system, not by the next click. */
  expire: { schema: expireJobSchema, id: (j: ExpireJob) => `${j.runId}-${j.step}-expire-${j.at}` },
  /** Fires when approvals of the step are due to escalate (`at`: the instant; one job per distinct instant). */
  escalate: { schema: expireJobSchema, id: (j: ExpireJob) => `${j.runId}-${j.step}-escalate-${j.at}` },
  /** A child's end resumes its parent's waiting step (the step itself checks that every child ended). */
  wake: { schema: wakeJobSchema, id: (j: WakeJob) => `${j.runId}-${j.step}-wake-${j.child}` },
  /** The reaper's re-kick of a stuck step: one per run version, so a repair is never a no-op on a finished job id. */
  repair: { schema: repairJobSchema, id: (j: RepairJob) => `${j.runId}-${j.step}-repair-${j.version}` },
  /** Undoes a finished run's completed writes in reverse order (engine/compensation.ts); a killed worker's job is taken up again. */
  compensate: { schema: compensateJobSchema, id: (j: CompensateJob) => `${j.runId}-compensate-${j.round}` },
  /** Archives a finished run (with the archive on), off the step's path; enqueued again by a change after the finish. */
  archive: { schema: archiveJobSchema, id: (j: ArchiveJob) => `${j.runId}-archive`, opts: ARCHIVE_JOB_OPTIONS },
  /** Starts the next run queued for a session (`ifBusy`); idempotent, so a duplicate only finds the session taken. */
  admit: { schema: admitJobSchema, id: (j: AdmitJob) => `${j.runId}-admit-${j.cause}` },
  /** Hands a tenant's freed slots to its waiting runs, oldest first (`queueBeyondLimit`). */
  slot: { schema: slotJobSchema, id: (j: SlotJob) => `${j.runId}-slot-${j.freed ? 'freed' : 'joined'}` },
} as const;

/** The repeating job (a BullMQ job scheduler) that fails runs past their deadline. */
export const DEADLINE_SWEEP = { scheduler: 'deadline-sweep', name: 'sweep' } as const;
/** The repeating job that finds runs no job will ever advance, and repairs them. */
export const REAPER = { scheduler: 'reaper', name: 'reap' } as const;
/** With the archive on: the repeating job that copies each tenant's decision-log head there. */
export const AUDIT_CHECKPOINT = { scheduler: 'audit-checkpoint', name: 'checkpoint-audit' } as const;
/** The payload of a housekeeping pass (sweep, reap, checkpoint): nothing, whatever the scheduler stored. */
export const housekeepingJobSchema = z.unknown().transform(() => null);
export type JobName = keyof typeof jobCatalog;
export type JobPayload<N extends JobName> = z.infer<(typeof jobCatalog)[N]['schema']>;

/** Each job's name to its payload: the catalog the queue port is typed by. */
export type JobPayloads = { [N in JobName]: JobPayload<N> };

/** How core schedules work; BullMQ in the services, an in-memory list in engine tests. */
export type Enqueue = JobQueue<JobPayloads>['enqueue'];

/** Drops a scheduled expiry timer that has nothing left to expire (its approvals were decided). */
export type CancelExpiry = JobQueue<JobPayloads>['cancelExpiry'];

export function stepJobOptions(attempts: number): JobsOptions {
  return {
    attempts,
    // Open breakers, full bulkheads and flaky models delay the step; jitter spreads the herd.
    backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 },
    // A finished job's work is in its run's record: keeping the job would cost Redis memory
    // and trimming commands on every step. A late duplicate of a done step finds the step
    // committed and only makes sure the next job exists (I2).
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3600 },
  };
}

/**
 * The shard of a run: FNV-1a of its id, modulo the shard count. Stable across processes
 * and releases, so every step, resume and timer of a run goes to one queue.
 */
export function shardOf(runId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) hash = Math.imul(hash ^ runId.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % shards;
}

/**
 * One step queue per shard and app version, each shard under its own hash tag (so, on a
 * cluster, its own slot): a worker consumes only its own version's queues. No version:
 * the queues of a deployment from before versions.
 */
export function stepQueue(connection: ConnectionOptions, shard: number, version?: string): Queue {
  return new Queue(STEP_QUEUE, { connection, prefix: stepQueuePrefix(shard, version) });
}

/** Which version's workers take a job: the runtime's routing over the fleet's version state (engine/version-route.ts). */
export interface JobRouter {
  /** The version of this process: its queues are `queues`. */
  own: string;
  route(job: JobRoute): string;
}

/**
 * Enqueues steps with deterministic ids: adding the same step twice is a no-op. With
 * several shards, a run's jobs go to the shard of its id. The housekeeping schedulers
 * (deadline sweeper, reaper) live on every shard's housekeeping queue, each pass covering
 * the whole fleet (passes are idempotent): a shard whose Redis master is down stops only
 * its own.
 */
export class StepScheduler implements JobQueue<JobPayloads> {
  /** This process's own version's step queues, one per shard. */
  readonly queues: Queue[];
  readonly housekeepingQueues: Queue[];
  /** Other versions' step queues, opened on first use (a fleet runs a few versions at a time). */
  private readonly others = new Map<string, Queue[]>();

  constructor(
    private readonly connection: ConnectionOptions,
    private readonly attempts: number,
    private readonly shards = 1,
    private readonly router?: JobRouter,
    /** Every queue's `error` (each one opened later too): without a listener BullMQ prints them outside the log. */
    private readonly onError: (err: Error) => void = () => {},
  ) {
    this.queues = this.open(router?.own);
    this.housekeepingQueues = Array.from({ length: shards }, (_, shard) =>
      new Queue(HOUSEKEEPING_QUEUE, { connection, prefix: queuePrefix(shard) }).on('error', this.onError),
    );
  }

  private open(version: string | undefined): Queue[] {
    return Array.from({ length: this.shards }, (_, shard) => stepQueue(this.connection, shard, version).on('error', this.onError));
  }

  private queuesOf(version: string | undefined): Queue[] {
    if (version === this.router?.own) return this.queues;
    const key = version ?? '';
    let queues = this.others.get(key);
    if (!queues) {
      queues = this.open(version);
      this.others.set(key, queues);
    }
    return queues;
  }

  /** The queue holding `runId`'s jobs for the workers of `version` (default: this process's). */
  queueOf(runId: string, version = this.router?.own): Queue {
    return this.queuesOf(version)[shardOf(runId, this.shards)] as Queue;
  }

  /** The queue a run's next job goes to: its shard, for the version its route names. */
  queueFor(runId: string, route: JobRoute): Queue {
    return this.queueOf(runId, this.router ? this.router.route(route) : undefined);
  }

  /** An expiry timer waits on its shard's housekeeping queue, which workers of every version take: expiry applies while no worker of the run's version lives. */
  private expiryQueueOf(runId: string): Queue {
    return this.housekeepingQueues[shardOf(runId, this.shards)] as Queue;
  }

  readonly enqueue: Enqueue = async (name, job, opts) => {
    // The catalog entry matches `name`; TypeScript cannot correlate the union, hence the widening.
    const entry = jobCatalog[name] as unknown as {
      schema: z.ZodType<JobPayload<typeof name>>;
      id: (j: JobPayload<typeof name>) => string;
      opts?: JobsOptions;
    };
    // A job enqueued inside a span (the next step, from the step's span) continues it unless told otherwise.
    const traceparent = job.traceparent ?? activeTraceparent();
    const payload = entry.schema.parse(traceparent ? { ...job, traceparent } : job);
    const delay = Math.max(0, Math.ceil(opts?.delayMs ?? 0));
    const queue = name === 'expire' ? this.expiryQueueOf(payload.runId) : this.queueFor(payload.runId, opts?.route ?? {});
    await queue.add(name, payload, {
      ...stepJobOptions(this.attempts),
      ...entry.opts,
      jobId: entry.id(payload),
      ...(delay ? { delay } : {}),
    });
  };

  /** The jobs waiting for the workers of `version` (waiting, delayed or running), over every shard. */
  async jobCounts(version: string): Promise<number> {
    const counts = await Promise.all(
      this.queuesOf(version).map((q) => q.getJobCounts('waiting', 'prioritized', 'delayed', 'paused', 'active')),
    );
    return counts.reduce((sum, c) => sum + Object.values(c).reduce((a, b) => a + b, 0), 0);
  }

  /**
   * Moves the jobs waiting on `from`'s queues to `to`'s, under the same ids, kinds and
   * remaining delays: whatever their kind (steps, resumes, wake-ups, undos, archive jobs),
   * none waits for a version being left. A running job stays where it is (a live worker
   * holds it; removing it fails), so no job runs twice at once. Returns how many moved.
   */
  async moveJobs(from: string, to: string): Promise<number> {
    let moved = 0;
    for (const queue of this.queuesOf(from)) {
      for (const job of await queue.getJobs(['waiting', 'prioritized', 'delayed', 'paused'])) {
        if (!job?.id || typeof job.data?.runId !== 'string') continue;
        const delay = Math.max(0, job.timestamp + (job.delay ?? 0) - Date.now());
        const taken = await job.remove().then(
          () => false,
          () => true,
        );
        if (taken) continue;
        await this.queueOf(job.data.runId, to).add(job.name, job.data, { ...job.opts, jobId: job.id, delay });
        moved++;
      }
    }
    return moved;
  }

  /** Removes a delayed expiry job, best effort: one already running (locked) or gone is left alone, and firing late it does nothing. */
  readonly cancelExpiry: CancelExpiry = async (job) => {
    const payload = expireJobSchema.parse(job);
    await this.expiryQueueOf(payload.runId)
      .remove(jobCatalog.expire.id(payload))
      .catch(() => 0);
  };

  /**
   * Idempotent: every worker upserts the same schedulers on every shard; BullMQ keeps one
   * of each per queue. The ones older releases kept on shard 0's step queue are removed.
   */
  async scheduleHousekeeping(sweepEveryMs: number, reapEveryMs: number, auditCheckpointEveryMs?: number): Promise<void> {
    const opts = { removeOnComplete: true, removeOnFail: 100 };
    // Without the archive there is nowhere to checkpoint to: a scheduler left by a fleet that had it goes.
    const checkpoint = (queue: Queue) =>
      auditCheckpointEveryMs
        ? queue.upsertJobScheduler(
            AUDIT_CHECKPOINT.scheduler,
            { every: auditCheckpointEveryMs },
            { name: AUDIT_CHECKPOINT.name, data: {}, opts },
          )
        : queue.removeJobScheduler(AUDIT_CHECKPOINT.scheduler);
    const legacy = this.queuesOf(undefined)[0] as Queue;
    // Shard by shard: one whose master is down does not keep the others from being scheduled.
    const done = await Promise.allSettled([
      legacy.removeJobScheduler(DEADLINE_SWEEP.scheduler),
      legacy.removeJobScheduler(REAPER.scheduler),
      ...this.housekeepingQueues.map(async (queue) => {
        await queue.upsertJobScheduler(DEADLINE_SWEEP.scheduler, { every: sweepEveryMs }, { name: DEADLINE_SWEEP.name, data: {}, opts });
        await queue.upsertJobScheduler(REAPER.scheduler, { every: reapEveryMs }, { name: REAPER.name, data: {}, opts });
        await checkpoint(queue);
      }),
    ]);
    const failed = done.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues, ...[...this.others.values()].flat(), ...this.housekeepingQueues].map((q) => q.close()));
  }
}
