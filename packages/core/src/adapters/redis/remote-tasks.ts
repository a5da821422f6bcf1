import { z } from 'zod';
import { runKeys } from '../../shared/keys.js';
import type { RedisClient } from './redis.js';

const entrySchema = z.object({ agent: z.string(), taskId: z.string() });
export type RemoteTask = z.infer<typeof entrySchema>;

/**
 * The remote A2A tasks a run's calls wait on, by call (its idempotency key): what must be
 * cancelled when the run ends first. The effect ledger cannot say it: a run's terminal
 * commit drops the ledger. Each entry expires with the ledger's TTL.
 */
export class RemoteTaskList {
  constructor(
    private readonly redis: RedisClient,
    private readonly ttlSeconds = 30 * 86_400,
  ) {}

  async add(runId: string, callKey: string, task: RemoteTask): Promise<void> {
    const key = runKeys(runId).remoteTasks;
    await this.redis.multi().hset(key, callKey, JSON.stringify(task)).expire(key, this.ttlSeconds).exec();
  }

  /** The call saw its task end: nothing left to cancel. */
  async remove(runId: string, callKey: string): Promise<void> {
    await this.redis.hdel(runKeys(runId).remoteTasks, callKey);
  }

  /** The tasks still open, by call; an entry that does not parse is skipped (nothing could cancel it). */
  async list(runId: string): Promise<Map<string, RemoteTask>> {
    const raw = await this.redis.hgetall(runKeys(runId).remoteTasks);
    const open = new Map<string, RemoteTask>();
    for (const [callKey, json] of Object.entries(raw)) {
      const parsed = entrySchema.safeParse(JSON.parse(json));
      if (parsed.success) open.set(callKey, parsed.data);
    }
    return open;
  }
}
