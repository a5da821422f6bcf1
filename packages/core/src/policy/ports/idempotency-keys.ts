import type { IdempotencyEntry } from '../run/idempotency.js';

/** Idempotency-Keys (already scoped to a tenant and user), claimed before a run is created. */
export interface IdempotencyKeys {
  /** Claims the key; returns what it holds if someone was first. */
  claim(key: string, claim: IdempotencyEntry, ttlSeconds: number): Promise<IdempotencyEntry | null>;
  /** Binds a claim to its run, now that it exists; a claim that lapsed is left alone. */
  bind(key: string, claim: IdempotencyEntry, ttlSeconds: number): Promise<void>;
  /** Releases a claim whose run was not created. */
  release(key: string, claim: IdempotencyEntry): Promise<void>;
}
