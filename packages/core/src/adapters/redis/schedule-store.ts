import { type ScheduleFiring, type ScheduleRecord, scheduleFiringSchema, scheduleRecordSchema } from '@rein/contract';
import { scheduleKeys } from '../../shared/keys.js';
import { AddScheduleResult, type ScriptGateway, scriptGateway } from './lua-scripts.js';
import type { RedisClient } from './redis.js';

/** Firings kept per schedule in its history. */
export const SCHEDULE_HISTORY_SIZE = 50;

const parse = (raw: string) => scheduleRecordSchema.parse(JSON.parse(raw));

/**
 * Schedules (one hash for the fleet and a set of ids per tenant, under one hash tag), each
 * one's latest firings and its last run.
 */
export class ScheduleStore {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;
  private indexing?: Promise<void>;

  constructor(redis: RedisClient) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  /**
   * Stores a new schedule unless its tenant already holds `max` (add-schedule-2.lua: the
   * count and the write are one step); returns whether it was stored.
   */
  async add(schedule: ScheduleRecord, max: number): Promise<boolean> {
    await this.indexed();
    const json = JSON.stringify(scheduleRecordSchema.parse(schedule));
    const tenant = scheduleKeys.tenant(schedule.owner.tenantId);
    return (await this.scripts.addSchedule({ all: scheduleKeys.all, tenant }, { id: schedule.id, json, max })) === AddScheduleResult.Added;
  }

  /** Rewrites a stored schedule (an edit, a pause); its tenant does not change. */
  async put(schedule: ScheduleRecord): Promise<void> {
    await this.redis.hset(scheduleKeys.all, schedule.id, JSON.stringify(scheduleRecordSchema.parse(schedule)));
  }

  async get(id: string): Promise<ScheduleRecord | null> {
    const raw = await this.redis.hget(scheduleKeys.all, id);
    return raw ? parse(raw) : null;
  }

  /** One tenant's schedules, oldest first (at most its limit: the fleet's others are not read). */
  async forTenant(tenantId: string): Promise<ScheduleRecord[]> {
    await this.indexed();
    const ids = await this.redis.smembers(scheduleKeys.tenant(tenantId));
    if (ids.length === 0) return [];
    const raw = await this.redis.hmget(scheduleKeys.all, ...ids);
    // An id whose record is gone was left by a removal racing the first indexing: it counts no more.
    const gone = ids.filter((_, i) => raw[i] === null);
    if (gone.length) await this.redis.srem(scheduleKeys.tenant(tenantId), ...gone);
    return raw
      .flatMap((r) => (r === null ? [] : [parse(r)]))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /** Every schedule of the fleet, scanned in pages (a deploy's impact check reads their agents). */
  async *all(): AsyncGenerator<ScheduleRecord> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(scheduleKeys.all, cursor, 'COUNT', 500);
      for (let i = 1; i < flat.length; i += 2) {
        const parsed = scheduleRecordSchema.safeParse(JSON.parse(flat[i] as string));
        if (parsed.success) yield parsed.data;
      }
      cursor = next;
    } while (cursor !== '0');
  }

  /** Removes the schedule, its history and its last run; returns whether it existed. */
  async remove(schedule: Pick<ScheduleRecord, 'id' | 'owner'>): Promise<boolean> {
    const { id } = schedule;
    const [[, removed] = [null, 0]] =
      (await this.redis
        .multi()
        .hdel(scheduleKeys.all, id)
        .srem(scheduleKeys.tenant(schedule.owner.tenantId), id)
        .del(scheduleKeys.history(id), scheduleKeys.lastRun(id))
        .exec()) ?? [];
    return removed === 1;
  }

  /**
   * Schedules stored before the per-tenant sets existed join their tenant's set, once per
   * store (and once for good when the marker is set): until then their tenant's limit and
   * listing would not see them.
   */
  private indexed(): Promise<void> {
    this.indexing ??= (async () => {
      if (await this.redis.exists(scheduleKeys.indexed)) return;
      const tx = this.redis.multi();
      for (const s of (await this.redis.hvals(scheduleKeys.all)).map(parse)) tx.sadd(scheduleKeys.tenant(s.owner.tenantId), s.id);
      await tx.set(scheduleKeys.indexed, '1').exec();
    })().catch((err: unknown) => {
      this.indexing = undefined; // the next call tries again
      throw err;
    });
    return this.indexing;
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
