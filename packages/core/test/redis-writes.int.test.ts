import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient, sendCommands } from '../src/adapters/redis/redis.js';
import { RedisOutages } from '../src/adapters/redis/redis-outages.js';
import { startTestRedis, type TestRedis } from '../src/testing/index.js';
import { readsProcessed } from './harness.js';

// A server of its own: the read count is server-wide.
let server: TestRedis;
let admin: Redis;
let redis: RedisClient;
beforeAll(async () => {
  server = await startTestRedis();
  admin = new Redis(server.url);
  redis = await connectRedis({ url: server.url, tls: 'off' }, 'worker', new RedisOutages(pino({ level: 'silent' })));
});
afterAll(async () => {
  redis?.disconnect();
  admin?.disconnect();
  await server?.stop();
});

describe('a Rein Redis connection', () => {
  it('sends what it is asked in one turn of the event loop as one write, promise continuations included', async () => {
    await redis.set('k', 'v');
    const before = await readsProcessed(admin);
    // Separate calls, not a pipeline, some issued from later microtasks of the same turn.
    const replies = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        for (let hop = 0; hop < i % 4; hop++) await Promise.resolve();
        return redis.get('k');
      }),
    );
    expect(replies).toEqual(Array(20).fill('v'));
    // One read for the twenty commands, one for the INFO that counts them.
    expect((await readsProcessed(admin)) - before).toBe(2);
  });

  it('still sends a command issued on its own (nothing waits for company)', async () => {
    await expect(redis.incr('n')).resolves.toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await expect(redis.incr('n')).resolves.toBe(2);
  });

  it("sends commands given together in one write, and fails with a failed one's own error while the others still run", async () => {
    await redis.set('text', 'v');
    const before = await readsProcessed(admin);
    const sent = sendCommands(redis, [
      ['set', 'a', '1'],
      ['hget', 'text', 'field'], // WRONGTYPE: a string is no hash
      ['set', 'b', '2'],
    ]);
    await expect(sent).rejects.toThrow(/WRONGTYPE/);
    expect(await admin.mget('a', 'b')).toEqual(['1', '2']);
    // One read for the three commands, one for the MGET, one for the INFO that counts them.
    expect((await readsProcessed(admin)) - before).toBe(3);
  });

  it('keeps coalescing after Redis drops the connection', async () => {
    await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await expect(redis.get('k')).resolves.toBe('v'); // reconnected on a new socket
    const before = await readsProcessed(admin);
    await Promise.all(Array.from({ length: 10 }, () => redis.get('k')));
    expect((await readsProcessed(admin)) - before).toBe(2);
  });
});
