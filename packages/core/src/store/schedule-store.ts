import { scheduleKeys } from '../keys.js';
import type { RedisClient } from '../redis.js';
import { type ScheduleFiring, type ScheduleRecord, scheduleFiringSchema, scheduleRecordSchema } from '../schemas/schedule.js';

/** Firings kept per schedule in its history. */
export const SCHEDULE_HISTORY_SIZE = 50;

/** Schedules (one hash for the fleet, under one hash tag), each one's latest firings and its last run. */
export class ScheduleStore {
  constructor(private readonly redis: RedisClient) {}

  async put(schedule: ScheduleRecord): Promise<void> {
    await this.redis.hset(scheduleKeys.all, schedule.id, JSON.stringify(scheduleRecordSchema.parse(schedule)));
  }

  async get(id: string): Promise<ScheduleRecord | null> {
    const raw = await this.redis.hget(scheduleKeys.all, id);
    return raw ? scheduleRecordSchema.parse(JSON.parse(raw)) : null;
  }

  /** Every schedule of the fleet, oldest first: what listing a tenant's reads (bounded by the per-tenant cap times the tenants). */
  async all(): Promise<ScheduleRecord[]> {
    const raw = await this.redis.hvals(scheduleKeys.all);
    return raw.map((r) => scheduleRecordSchema.parse(JSON.parse(r))).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Removes the schedule, its history and its last run; returns whether it existed. */
  async remove(id: string): Promise<boolean> {
    const [[, removed] = [null, 0]] =
      (await this.redis.multi().hdel(scheduleKeys.all, id).del(scheduleKeys.history(id), scheduleKeys.lastRun(id)).exec()) ?? [];
    return removed === 1;
  }

  async recordFiring(id: string, firing: ScheduleFiring): Promise<void> {
    const key = scheduleKeys.history(id);
    await this.redis
      .multi()
      .lpush(key, JSON.stringify(scheduleFiringSchema.parse(firing)))
      .ltrim(key, 0, SCHEDULE_HISTORY_SIZE - 1)
      .exec();
  }

  /** The latest firings, newest first. */
  async history(id: string, limit = SCHEDULE_HISTORY_SIZE): Promise<ScheduleFiring[]> {
    const raw = await this.redis.lrange(scheduleKeys.history(id), 0, limit - 1);
    return raw.map((r) => scheduleFiringSchema.parse(JSON.parse(r)));
  }

  async lastRun(id: string): Promise<string | null> {
    return this.redis.get(scheduleKeys.lastRun(id));
  }

  async setLastRun(id: string, runId: string): Promise<void> {
    await this.redis.set(scheduleKeys.lastRun(id), runId);
  }
}
