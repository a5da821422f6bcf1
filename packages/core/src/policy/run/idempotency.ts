import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ConflictError, IdempotencyKeyReusedError } from '../../shared/errors.js';
import { canonicalJson } from '../app/argument-hash.js';

/**
 * What an Idempotency-Key holds: the run it was claimed for, a hash of the request body
 * it came with, and whether that run really exists yet (`bound`). A claim that is never
 * bound is released, or lapses after a short TTL if the process died holding it.
 */
export const idempotencyEntrySchema = z.object({ runId: z.string().min(1), bodyHash: z.string().length(64), bound: z.boolean() });
export type IdempotencyEntry = z.infer<typeof idempotencyEntrySchema>;

/** SHA-256 of the canonical body (its depth is bounded at the HTTP boundary). */
export const bodyHash = (body: unknown) => createHash('sha256').update(canonicalJson(body)).digest('hex');

/**
 * What a request whose key is already held gets: the run (a replay) if the body is the
 * same and the run exists; 422 for another body; 409 while the first request is still
 * creating its run.
 */
export function replayOf(held: IdempotencyEntry, hash: string): string {
  if (held.bodyHash !== hash) throw new IdempotencyKeyReusedError();
  if (!held.bound) throw new ConflictError('idempotency_key_in_flight', 'a request with this Idempotency-Key is still being processed');
  return held.runId;
}
