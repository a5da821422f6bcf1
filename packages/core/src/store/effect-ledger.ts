import { runKeys } from '../keys.js';
import { type RedisClient, sendCommands } from '../redis.js';
import { type Effect, effectSchema } from '../schemas/run.js';

/** `run:step:toolCallId`: the key a tool call's effect is recorded under and that write tools receive. */
export const idempotencyKey = (runId: string, step: number, toolCallId: string) => `${runId}:${step}:${toolCallId}`;

/**
 * Intent and result of every write tool's call (I4). An intent without a result
 * means a worker died mid-call: the caller decides whether re-running is safe. The run's
 * terminal commit drops the ledger; every write sets a TTL, so that a late write by a
 * worker still busy with a finished (e.g. cancelled) run cannot outlive it. Each write
 * and its TTL go out pipelined, not in MULTI: both are idempotent, and a TTL missed in a
 * crash only leaves a ledger to the terminal commit's cleanup.
 */
export class EffectLedger {
  constructor(
    private readonly redis: RedisClient,
    private readonly ttlSeconds = 30 * 86_400,
  ) {}

  async get(runId: string, key: string): Promise<Effect | null> {
    const raw = await this.redis.hget(runKeys(runId).effects, key);
    return raw ? effectSchema.parse(JSON.parse(raw)) : null;
  }

  /** Records the intent unless something is recorded; returns what was there before. */
  async recordIntent(runId: string, key: string, tool: string): Promise<Effect | null> {
    const intent: Effect = { state: 'intent', tool, at: new Date().toISOString() };
    const k = runKeys(runId).effects;
    const [won] = await sendCommands(this.redis, [
      ['hsetnx', k, key, JSON.stringify(intent)],
      ['expire', k, this.ttlSeconds],
    ]);
    return won ? null : this.get(runId, key);
  }

  /** Withdraws an intent whose call never started (its breaker refused it), so a retry is not "uncertain". */
  async clearIntent(runId: string, key: string): Promise<void> {
    await this.redis.hdel(runKeys(runId).effects, key);
  }

  async recordResult(runId: string, key: string, tool: string, ok: boolean, observation: string): Promise<void> {
    const done: Effect = { state: 'done', tool, at: new Date().toISOString(), ok, observation };
    const k = runKeys(runId).effects;
    await sendCommands(this.redis, [
      ['hset', k, key, JSON.stringify(done)],
      ['expire', k, this.ttlSeconds],
    ]);
  }
}
