import { randomUUID } from 'node:crypto';
import { BulkheadFullError } from '../../shared/errors.js';
import { breakerKeys, fleetLimitKey } from '../../shared/keys.js';
import { LeaseResult, type ScriptGateway, scriptGateway } from '../redis/lua-scripts.js';
import type { RedisClient } from '../redis/redis.js';
import type { FleetBreakerState } from './circuit-breakers.js';

/**
 * A lease asked for ahead of its call, so the request leaves with whatever else the caller
 * sends in the same turn (a step's read): `run` takes it instead of asking again.
 */
export interface HeldLease {
  readonly dependency: string;
  /** Whether the lease was granted, with the dependency's fleet breaker state read beside it. */
  readonly granted: Promise<{ leased: boolean; breaker: FleetBreakerState }>;
  /** Gives the lease back; once, and only a lease that was granted. Not awaited: a lost release expires with its lease. */
  release(): void;
}

/**
 * A concurrency limit shared by every worker (e.g. a model provider's rate limit):
 * N workers together never hold more than `limit` calls. Leases expire, so a crash
 * frees its slot after `leaseMs`.
 */
export class FleetLimit {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;

  constructor(
    redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  /** Sends the lease request now; the answer is awaited by whoever uses the lease. */
  take(dependency: string, limit: number, leaseMs: number): HeldLease {
    const key = fleetLimitKey(dependency);
    const b = breakerKeys(dependency);
    const id = randomUUID();
    const granted = this.scripts
      .acquireLease({ leases: key, open: b.open, tripped: b.tripped }, { leaseId: id, nowMs: this.now(), ttlMs: leaseMs, limit })
      .then(([got, open, tripped]) => ({ leased: got === LeaseResult.Leased, breaker: [open, tripped] as FleetBreakerState }));
    // A lease taken ahead may never be used: its failure is the user's to see, not an unhandled rejection.
    granted.catch(() => undefined);
    let released = false;
    return {
      dependency,
      granted,
      release: () => {
        if (released) return;
        released = true;
        granted.then(({ leased }) => (leased ? this.redis.zrem(key, id) : undefined)).catch(() => undefined);
      },
    };
  }

  /**
   * Runs `fn` under a lease (`held`, when one for this dependency was taken ahead). The
   * lease comes with the dependency's fleet breaker state, read in the same call (one
   * round trip for both), for `fn` to hand to its breaker.
   */
  async run<T>(
    dependency: string,
    limit: number,
    leaseMs: number,
    fn: (breaker: FleetBreakerState) => Promise<T>,
    held?: HeldLease,
  ): Promise<T> {
    const lease = held?.dependency === dependency ? held : this.take(dependency, limit, leaseMs);
    try {
      const { leased, breaker } = await lease.granted;
      if (!leased) throw new BulkheadFullError(dependency, 'fleet');
      return await fn(breaker);
    } finally {
      // The step need not wait for the release.
      lease.release();
    }
  }
}
