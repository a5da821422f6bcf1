import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BACKENDS, type BackendKind, useBackend } from './backends.js';
import { TTL_SECONDS } from './fixtures.js';

/** The IdempotencyKeys port's behaviours on one Redis, a 3-master cluster and the in-memory fake. */
describe.each<BackendKind>(BACKENDS)('the idempotency keys on %s', (kind) => {
  const backend = useBackend(kind, TTL_SECONDS);

  const key = 'rein:tenant:{acme}:idem:alice:k1';
  const claim = (runId = randomUUID()) => ({ runId, bodyHash: 'b'.repeat(64), bound: false });

  it('gives a key to the first claim; a later one gets what it holds, bound once its run exists', async () => {
    const keys = backend().idempotencyKeys;
    const first = claim();
    expect(await keys.claim(key, first, 60)).toBeNull();
    expect(await keys.claim(key, claim(), 60)).toEqual(first);
    await keys.bind(key, first, 3600);
    expect(await keys.claim(key, claim(), 60)).toEqual({ ...first, bound: true });
  });

  it('frees a released claim, and leaves a key alone for a claim that does not hold it', async () => {
    const keys = backend().idempotencyKeys;
    const first = claim();
    await keys.claim(key, first, 60);
    await keys.release(key, claim());
    await keys.bind(key, claim(), 3600);
    expect(await keys.claim(key, claim(), 60)).toEqual(first);
    await keys.release(key, first);
    const second = claim();
    expect(await keys.claim(key, second, 60)).toBeNull();
    expect(await keys.claim(key, claim(), 60)).toEqual(second);
  });
});
