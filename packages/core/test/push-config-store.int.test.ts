import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PushConfigStore, pushConfigField, type StoredPushConfig } from '../src/features/a2a/push-config-store.js';
import { runKeys } from '../src/shared/keys.js';
import { startTestRedis, type TestRedis } from '../src/testing/redis-server.js';

const config = (taskId: string, userId: string, id: string): StoredPushConfig => ({
  schemaVersion: 1,
  id,
  taskId,
  tenantId: 'acme',
  userId,
  url: `https://receiver.test/${id}`,
  token: 'tok',
  createdAt: new Date().toISOString(),
});

describe('A2A push-config store', () => {
  let testRedis: TestRedis;
  let redis: Redis;
  let store: PushConfigStore;
  beforeAll(async () => {
    testRedis = await startTestRedis();
    redis = new Redis(testRedis.url);
    store = new PushConfigStore(redis, 3600);
  });
  afterAll(async () => {
    redis?.disconnect();
    await testRedis?.stop();
  });

  it('holds at most `max` configs of a task under concurrent puts; replacing one it holds is allowed', async () => {
    const task = randomUUID();
    const puts = await Promise.all(Array.from({ length: 15 }, (_, i) => store.put(config(task, 'alice', `c${i}`), 10)));
    expect(puts.filter(Boolean)).toHaveLength(10);
    expect(await store.all(task)).toHaveLength(10);
    const held = (await store.all(task))[0] as StoredPushConfig;
    expect(await store.put({ ...held, url: 'https://receiver.test/moved' }, 10)).toBe(true);
    expect((await store.byField(task, pushConfigField('alice', held.id)))?.url).toBe('https://receiver.test/moved');
    expect(await redis.ttl(runKeys(task).a2aPush)).toBeGreaterThan(0);
  });

  it("keeps two callers' configs of the same id apart, and leaves out one that does not parse", async () => {
    const task = randomUUID();
    await store.put(config(task, 'alice', 'hook'), 10);
    await store.put({ ...config(task, 'bob:x', 'hook'), url: 'https://receiver.test/bob' }, 10);
    expect((await store.byField(task, pushConfigField('alice', 'hook')))?.url).toBe('https://receiver.test/hook');
    expect((await store.byField(task, pushConfigField('bob:x', 'hook')))?.url).toBe('https://receiver.test/bob');
    await redis.hset(runKeys(task).a2aPush, 'garbage', '{not json');
    expect((await store.all(task)).map((c) => c.userId).sort()).toEqual(['alice', 'bob:x']);
    expect(await store.remove(task, 'alice', 'hook')).toBe(true);
    expect(await store.remove(task, 'alice', 'hook')).toBe(false);
    expect(await store.byField(task, pushConfigField('bob:x', 'hook'))).not.toBeNull();
  });

  it('swaps the last pushed state, answering the one before', async () => {
    const task = randomUUID();
    expect(await store.swapState(task, 'TASK_STATE_WORKING')).toBeNull();
    expect(await store.swapState(task, 'TASK_STATE_WORKING')).toBe('TASK_STATE_WORKING');
    expect(await store.swapState(task, 'TASK_STATE_INPUT_REQUIRED')).toBe('TASK_STATE_WORKING');
  });
});
