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

/**
 * Warns when Redis is configured in a way that loses work: BullMQ needs
 * `maxmemory-policy noeviction`, and without AOF a restart forgets every run. Managed
 * Redis may refuse CONFIG; then it says it could not check.
 */
export async function checkRedisSettings(redis: Redis, logger: Logger): Promise<string[]> {
  const problems: string[] = [];
  try {
    const [, policy] = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const [, aof] = (await redis.config('GET', 'appendonly')) as string[];
    if (policy !== 'noeviction') problems.push(`maxmemory-policy is ${policy}; BullMQ needs noeviction, or Redis may evict jobs and locks`);
    if (aof !== 'yes') problems.push('appendonly is off; a Redis restart will lose runs, approvals and queued steps');
  } catch (err) {
    logger.warn(
      { err: (err as Error).message },
      'could not read the Redis configuration (CONFIG GET refused?); check maxmemory-policy and AOF by hand',
    );
    return problems;
  }
  for (const problem of problems) logger.warn({ redis: 'settings' }, `Redis: ${problem}`);
  return problems;
}
