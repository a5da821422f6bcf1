import { z } from 'zod';
import { scriptGateway } from '../../adapters/redis/lua-scripts.js';
import type { RedisClient } from '../../adapters/redis/redis.js';
import type { A2aTaskState } from '../../policy/a2a/a2a-task.js';
import { runKeys } from '../../shared/keys.js';

/** A push-notification config as stored: whose it is (the task's tenant, the caller who set it) and where it sends. */
export const storedPushConfigSchema = z.object({
  schemaVersion: z.literal(1),
  id: z.string().min(1),
  taskId: z.string().min(1),
  tenantId: z.string().min(1),
  userId: z.string().min(1),
  url: z.string().min(1),
  token: z.string().min(1),
  authentication: z.object({ scheme: z.string(), credentials: z.string() }).optional(),
  /** Set over A2A v0.3: its notifications carry v0.3's shape. */
  protocolVersion: z.literal('0.3').optional(),
  createdAt: z.string(),
});
export type StoredPushConfig = z.infer<typeof storedPushConfigSchema>;

/** A config's field in its task's hash: the caller's, so two callers' ids never collide. */
export const pushConfigField = (userId: string, id: string) => `${encodeURIComponent(userId)}:${id}`;

const parse = (raw: string) => storedPushConfigSchema.parse(JSON.parse(raw));

const safeJson = (raw: string): unknown => {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
};

/**
 * A task's push-notification configs: one hash under the run's hash tag (dropped with the
 * run's keys), living as long as the run's trace from the latest write.
 */
export class PushConfigStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly ttlSeconds: number,
  ) {}

  /** Stores the config (a caller's same id replaces it) unless the task already holds `max`: checked and written in one step. */
  async put(config: StoredPushConfig, max: number): Promise<boolean> {
    const json = JSON.stringify(storedPushConfigSchema.parse(config));
    const field = pushConfigField(config.userId, config.id);
    return (
      (await scriptGateway(this.redis).putPushConfig(
        { configs: runKeys(config.taskId).a2aPush },
        { field, json, max, ttlSeconds: this.ttlSeconds },
      )) === 1
    );
  }

  /** One config by its field (a delivery's target); null once deleted. */
  async byField(taskId: string, field: string): Promise<StoredPushConfig | null> {
    const raw = await this.redis.hget(runKeys(taskId).a2aPush, field);
    return raw ? parse(raw) : null;
  }

  /**
   * Every config of the task, whoever set it: what a change of state fans out to. Empty for
   * nearly every run. One that does not parse is left out, so it cannot hold up a run's finish hooks.
   */
  async all(taskId: string): Promise<StoredPushConfig[]> {
    const raw = await this.redis.hvals(runKeys(taskId).a2aPush);
    return raw
      .flatMap((r) => {
        const parsed = storedPushConfigSchema.safeParse(safeJson(r));
        return parsed.success ? [parsed.data] : [];
      })
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /** Removes one config of this caller; returns whether it existed. */
  async remove(taskId: string, userId: string, id: string): Promise<boolean> {
    return (await this.redis.hdel(runKeys(taskId).a2aPush, pushConfigField(userId, id))) === 1;
  }

  /**
   * Records `state` as the task's last pushed state and returns the one before: a commit
   * that leaves the A2A state as it was (a second approval decided, a resumed step) pushes
   * nothing, and two processes seeing the same change push it once.
   */
  async swapState(taskId: string, state: A2aTaskState): Promise<string | null> {
    return this.redis.set(runKeys(taskId).a2aPushState, state, 'EX', this.ttlSeconds, 'GET');
  }
}
