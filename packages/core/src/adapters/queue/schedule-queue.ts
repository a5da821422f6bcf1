import { type ConnectionOptions, Queue } from 'bullmq';
import { z } from 'zod';
import { SCHEDULE_QUEUE_PREFIX } from '../../shared/keys.js';

export const SCHEDULE_QUEUE = 'rein-schedules';
/** The job a schedule's BullMQ job scheduler adds at each fire time. */
export const SCHEDULE_FIRE = { name: 'fire' } as const;
export const fireJobSchema = z.object({ scheduleId: z.string().min(1) });
export type FireJob = z.infer<typeof fireJobSchema>;

/** What the schedule service needs of the queue: one BullMQ job scheduler per enabled schedule. */
export interface ScheduleTimers {
  /** Creates or replaces the schedule's job scheduler (idempotent: every replica may call it). */
  upsert(schedule: { id: string; cron: string; timezone: string }): Promise<void>;
  remove(scheduleId: string): Promise<void>;
}

/**
 * The schedules' queue: BullMQ's job schedulers fire them (one delayed job per schedule at
 * a time, id `repeat:<scheduleId>:<fireTime>`), workers take the firings. Its own hash tag,
 * so it works on a cluster beside the step shards.
 */
export class ScheduleQueue implements ScheduleTimers {
  readonly queue: Queue;

  constructor(connection: ConnectionOptions) {
    this.queue = new Queue(SCHEDULE_QUEUE, { connection, prefix: SCHEDULE_QUEUE_PREFIX });
  }

  async upsert(schedule: { id: string; cron: string; timezone: string }): Promise<void> {
    await this.queue.upsertJobScheduler(
      schedule.id,
      { pattern: schedule.cron, tz: schedule.timezone },
      { name: SCHEDULE_FIRE.name, data: { scheduleId: schedule.id }, opts: { attempts: 3, removeOnComplete: true, removeOnFail: 100 } },
    );
  }

  async remove(scheduleId: string): Promise<void> {
    await this.queue.removeJobScheduler(scheduleId);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** The fire time of a scheduler's job: BullMQ keeps it as `prevMillis` (and in the id, `repeat:<id>:<ms>`). */
export function fireTimeOf(job: { id?: string | undefined; opts: { prevMillis?: number }; timestamp: number }): number {
  if (job.opts.prevMillis) return job.opts.prevMillis;
  const fromId = Number(job.id?.split(':').pop());
  return Number.isFinite(fromId) && fromId > 0 ? fromId : job.timestamp;
}
