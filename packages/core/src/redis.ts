import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';

/**
 * Producers (API, approver) fail fast while Redis is away so callers get a 503 at
 * once; workers (and BullMQ's blocking connections) wait and retry forever.
 */
export type RedisRole = 'producer' | 'worker';

export function redisOptions(role: RedisRole): RedisOptions {
  return role === 'producer'
    ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true }
    : { maxRetriesPerRequest: null, lazyConnect: true };
}

export async function connectRedis(url: string, role: RedisRole, logger: Logger): Promise<Redis> {
  const redis = new Redis(url, redisOptions(role));
  // Without a listener, ioredis reports every reconnect attempt as an unhandled error.
  redis.on('error', (err) => logger.warn({ err: err.message, role }, 'redis connection error'));
  await redis.connect();
  return redis;
}

/** A connection for BullMQ (which duplicates it for blocking commands); connects at once. */
export function bullConnection(url: string, role: RedisRole, logger: Logger): Redis {
  const redis = new Redis(url, { ...redisOptions(role), lazyConnect: false });
  redis.on('error', (err) => logger.warn({ err: err.message, role }, 'queue redis connection error'));
  return redis;
}
