import { SCHEMA_VERSION } from '@rein/contract';
import { z } from 'zod';
import type { RedisClient } from '../../adapters/redis/redis.js';
import { tenantKeys } from '../../shared/keys.js';

/** A LangGraph thread: a named session of one user, with the metadata its client keeps on it. */
export const threadRecordSchema = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  threadId: z.string(),
  tenantId: z.string(),
  userId: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ThreadRecord = z.infer<typeof threadRecordSchema>;

/** The threads a search reads at most before filtering by metadata: a search never reads a user's every thread. */
export const THREAD_SCAN_LIMIT = 1_000;

/** A user's threads: one hash (id → record) and one index by last update, both in the tenant's slot. */
export class ThreadStore {
  constructor(private readonly redis: RedisClient) {}

  /** Stores a new thread unless one of that id exists; returns whether it was created. */
  async create(thread: ThreadRecord): Promise<boolean> {
    const t = tenantKeys(thread.tenantId);
    const json = JSON.stringify(threadRecordSchema.parse(thread));
    const created = await this.redis.hsetnx(t.lgThreads(thread.userId), thread.threadId, json);
    if (created === 1) await this.redis.zadd(t.lgThreadsByTime(thread.userId), Date.parse(thread.updatedAt), thread.threadId);
    return created === 1;
  }

  async put(thread: ThreadRecord): Promise<void> {
    const t = tenantKeys(thread.tenantId);
    await this.redis
      .multi()
      .hset(t.lgThreads(thread.userId), thread.threadId, JSON.stringify(threadRecordSchema.parse(thread)))
      .zadd(t.lgThreadsByTime(thread.userId), Date.parse(thread.updatedAt), thread.threadId)
      .exec();
  }

  async get(tenantId: string, userId: string, threadId: string): Promise<ThreadRecord | null> {
    const raw = await this.redis.hget(tenantKeys(tenantId).lgThreads(userId), threadId);
    return raw ? threadRecordSchema.parse(JSON.parse(raw)) : null;
  }

  /** The user's threads, most recently updated first, at most `limit` of them. */
  async recent(tenantId: string, userId: string, limit: number): Promise<ThreadRecord[]> {
    const t = tenantKeys(tenantId);
    const ids = await this.redis.zrevrange(t.lgThreadsByTime(userId), 0, limit - 1);
    if (ids.length === 0) return [];
    const raw = await this.redis.hmget(t.lgThreads(userId), ...ids);
    return raw.flatMap((r) => (r ? [threadRecordSchema.parse(JSON.parse(r))] : []));
  }

  async remove(tenantId: string, userId: string, threadId: string): Promise<boolean> {
    const t = tenantKeys(tenantId);
    const [[, removed] = [null, 0]] =
      (await this.redis.multi().hdel(t.lgThreads(userId), threadId).zrem(t.lgThreadsByTime(userId), threadId).exec()) ?? [];
    return removed === 1;
  }
}
