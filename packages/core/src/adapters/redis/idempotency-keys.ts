import type { IdempotencyKeys } from '../../policy/ports/idempotency-keys.js';
import { type IdempotencyEntry, idempotencyEntrySchema } from '../../policy/run/idempotency.js';
import { type ScriptGateway, scriptGateway } from './lua-scripts.js';
import type { RedisClient } from './redis.js';

/** Idempotency-Keys in Redis: one string each, with its TTL; a claim is settled by a compare-and-set script. */
export class RedisIdempotencyKeys implements IdempotencyKeys {
  private readonly scripts: ScriptGateway;

  constructor(private readonly redis: RedisClient) {
    this.scripts = scriptGateway(redis);
  }

  /**
   * Claims an Idempotency-Key (already scoped to its tenant and user) for a run about to
   * be created; returns what the key holds if someone was first.
   */
  async claim(key: string, claim: IdempotencyEntry, ttlSeconds: number): Promise<IdempotencyEntry | null> {
    const set = await this.redis.set(key, JSON.stringify(claim), 'EX', ttlSeconds, 'NX');
    if (set === 'OK') return null;
    const held = await this.redis.get(key);
    // Gone in between (released or expired): claim again.
    return held === null ? this.claim(key, claim, ttlSeconds) : idempotencyEntrySchema.parse(JSON.parse(held));
  }

  /**
   * Binds a claimed key to its run, now that the run exists. A claim that lapsed in the
   * meantime (and may have been taken by another request) is left alone.
   */
  async bind(key: string, claim: IdempotencyEntry, ttlSeconds: number): Promise<void> {
    await this.scripts.settleIdempotencyKey(
      { key },
      { claim: JSON.stringify(claim), next: JSON.stringify({ ...claim, bound: true }), ttlSeconds },
    );
  }

  /** Releases a claim whose run was not created, so the key is free again. */
  async release(key: string, claim: IdempotencyEntry): Promise<void> {
    await this.scripts.settleIdempotencyKey({ key }, { claim: JSON.stringify(claim), next: '', ttlSeconds: 0 });
  }
}
