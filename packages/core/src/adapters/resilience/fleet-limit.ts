import { randomUUID } from 'node:crypto';
import { BulkheadFullError } from '../../shared/errors.js';
import { breakerKeys, fleetLimitKey } from '../../shared/keys.js';
import { LeaseResult, withScripts } from '../redis/lua-scripts.js';
import type { RedisClient } from '../redis/redis.js';
import type { FleetBreakerState } from './circuit-breakers.js';

/**
 * A concurrency limit shared by every worker (e.g. a model provider's rate limit):
 * N workers together never hold more than `limit` calls. Leases expire, so a crash
 * frees its slot after `leaseMs`.
 */
export class FleetLimit {
  private readonly redis: ReturnType<typeof withScripts>;

  constructor(
    redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {
    this.redis = withScripts(redis);
  }

  /**
   * Runs `fn` under a lease. The lease comes with the dependency's fleet breaker state,
   * read in the same call (one round trip for both), for `fn` to hand to its breaker.
   */
  async run<T>(dependency: string, limit: number, leaseMs: number, fn: (breaker: FleetBreakerState) => Promise<T>): Promise<T> {
    const key = fleetLimitKey(dependency);
    const b = breakerKeys(dependency);
    const lease = randomUUID();
    const [got, open, tripped] = await this.redis.acquireLease(
      key,
      b.open,
      b.tripped,
      lease,
      String(this.now()),
      String(leaseMs),
      String(limit),
    );
    if (got !== LeaseResult.Leased) throw new BulkheadFullError(dependency, 'fleet');
    try {
      return await fn([open, tripped]);
    } finally {
      // Not awaited: the step need not wait for the release, and a lost one expires with its lease.
      this.redis.zrem(key, lease).catch(() => undefined);
    }
  }
}
