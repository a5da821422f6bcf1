import { runKeys } from '../keys.js';
import type { RedisClient } from '../redis.js';
import { type Effect, effectSchema } from '../schemas/run.js';

/** `run:step:toolCallId`: the key a tool call's effect is recorded under and that write tools receive. */
export const idempotencyKey = (runId: string, step: number, toolCallId: string) => `${runId}:${step}:${toolCallId}`;

/**
 * Intent and result of every tool call (invariant 4). An intent without a result
 * means a worker died mid-call: the caller decides whether re-running is safe.
 */
export class EffectLedger {
  constructor(private readonly redis: RedisClient) {}

  async get(runId: string, key: string): Promise<Effect | null> {
    const raw = await this.redis.hget(runKeys(runId).effects, key);
    return raw ? effectSchema.parse(JSON.parse(raw)) : null;
  }

  /** Records the intent unless something is recorded; returns what was there before. */
  async recordIntent(runId: string, key: string, tool: string): Promise<Effect | null> {
    const intent: Effect = { state: 'intent', tool, at: new Date().toISOString() };
    const won = await this.redis.hsetnx(runKeys(runId).effects, key, JSON.stringify(intent));
    return won ? null : this.get(runId, key);
  }

  /** Withdraws an intent whose call never started (its breaker refused it), so a retry is not "uncertain". */
  async clearIntent(runId: string, key: string): Promise<void> {
    await this.redis.hdel(runKeys(runId).effects, key);
  }

  async recordResult(runId: string, key: string, tool: string, ok: boolean, observation: string): Promise<void> {
    const done: Effect = { state: 'done', tool, at: new Date().toISOString(), ok, observation };
    await this.redis.hset(runKeys(runId).effects, key, JSON.stringify(done));
  }
}
