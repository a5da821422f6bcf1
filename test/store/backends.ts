import type { RedisClient } from '@rein/core';
import {
  type EffectLedger,
  type IdempotencyKeys,
  RedisEffectLedger,
  RedisIdempotencyKeys,
  RedisSessions,
  type RunRepository,
  RunStore,
  type SessionRegistry,
  type TurnJournal,
} from '@rein/core/internal';
import { createMemoryStores } from '@rein/core/testing';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startTopology, type TopologyKind } from '../support/topology.js';

/** Where a port's spec suite runs: one Redis, a 3-master cluster, or the in-memory fakes of @rein/core/testing. */
export type BackendKind = TopologyKind | 'memory';
export const BACKENDS: BackendKind[] = ['single', 'cluster', 'memory'];

/** The persistence ports over one backend; `reset` empties it between tests. */
export interface Backend {
  runs: RunRepository & TurnJournal;
  ledger: EffectLedger;
  sessions: SessionRegistry;
  idempotencyKeys: IdempotencyKeys;
  /** The Redis the stores use (none for the fakes). */
  redis?: RedisClient;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

export async function openBackend(kind: BackendKind, ttlSeconds: number): Promise<Backend> {
  if (kind === 'memory') {
    const backend: Backend = {
      ...createMemoryStores(),
      async reset() {
        Object.assign(backend, createMemoryStores());
      },
      stop: async () => {},
    };
    return backend;
  }
  const topology = await startTopology(kind);
  const runs = new RunStore(topology.client, ttlSeconds);
  return {
    runs,
    ledger: new RedisEffectLedger(topology.client),
    sessions: new RedisSessions(topology.client, ttlSeconds, runs),
    idempotencyKeys: new RedisIdempotencyKeys(topology.client),
    redis: topology.client,
    reset: () => topology.flush(),
    stop: () => topology.stop(),
  };
}

/** Opens `kind`'s backend for the suite that calls it, empties it before each test and stops it after the suite. */
export function useBackend(kind: BackendKind, ttlSeconds: number): () => Backend {
  let backend: Backend | undefined;
  beforeAll(async () => {
    backend = await openBackend(kind, ttlSeconds);
  }, 120_000);
  afterAll(async () => backend?.stop());
  beforeEach(async () => backend?.reset());
  return () => backend as Backend;
}
