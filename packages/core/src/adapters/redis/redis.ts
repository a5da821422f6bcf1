import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { RedisUnavailableError } from '../../shared/errors.js';
import type { ReinOptions } from '../../shared/options.js';
import type { RedisOutages } from './redis-outages.js';

/**
 * Producers (API, approver) fail fast while Redis is away so callers get a 503 at
 * once; workers (and BullMQ's blocking connections) wait and retry forever.
 */
export type RedisRole = 'producer' | 'worker';

/** A connection to one Redis or to a Redis Cluster; everything Rein stores works on both. */
export type RedisClient = Redis | Cluster;

/** The settings that say where Redis is and how to log in. */
export type RedisSettings = Pick<ReinOptions['redis'], 'url' | 'tls'> & Partial<ReinOptions['redis']>;

export function redisOptions(role: RedisRole): RedisOptions {
  return role === 'producer'
    ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true }
    : { maxRetriesPerRequest: null, lazyConnect: true };
}

/** ACL user, password and TLS; they win over what the URL carries. */
function loginOptions(settings: RedisSettings): RedisOptions {
  return {
    ...(settings.username ? { username: settings.username } : {}),
    ...(settings.password ? { password: settings.password } : {}),
    ...(settings.tls === 'on' ? { tls: {} } : {}),
  };
}

/**
 * One client for the configured topology. On a cluster the offline queue and lazy
 * connect are the cluster's, the rest (retries per request, login, TLS) apply to
 * every node it discovers.
 */
export function createRedisClient(settings: RedisSettings, options: RedisOptions): RedisClient {
  const login = loginOptions(settings);
  if (!settings.clusterNodes) return coalesceWrites(new Redis(settings.url, { ...login, ...options }));
  const { enableOfflineQueue = true, lazyConnect = false, ...perNode } = options;
  const cluster = new Cluster(settings.clusterNodes, {
    redisOptions: { ...login, ...perNode },
    enableOfflineQueue,
    lazyConnect,
    // A failover promotes a replica within seconds: keep asking instead of failing the command.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    // No ready check: while a master is down and has no replica, CLUSTER INFO says
    // cluster_state:fail, ioredis then reconnects in a loop and the promise of the
    // connect() that started it never settles. BullMQ awaits that promise when it
    // rebuilds a worker's blocking connection, so that worker never fetched a job again.
    // Without the check, connect() settles once the slots are known; commands to the
    // missing slots fail and are retried (CLUSTERDOWN) until the node is back.
    enableReadyCheck: false,
  });
  cluster.on('+node', coalesceWrites);
  return cluster;
}

/**
 * Makes what a connection sends in one turn of the event loop leave in one socket write.
 * ioredis writes every command (or pipeline) at once; a worker's concurrent steps send
 * a dozen small writes per turn, and on a machine where a system call is expensive each
 * costs the worker a write and Redis a read. The socket is corked at the turn's first
 * write and uncorked by setImmediate, which runs once the turn's replies have been
 * handled (process.nextTick would run before their promise continuations send anything).
 * A pending immediate keeps the event loop from waiting for I/O, so nothing is held
 * back. ioredis's enableAutoPipelining batches too, but its per-batch bookkeeping cost
 * the worker more CPU than it saved (docs/performance.md).
 */
function coalesceWrites(redis: Redis): Redis {
  // Each (re)connect brings a new socket.
  redis.on('connect', () => {
    const socket = redis.stream;
    const write = socket.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      socket.uncork();
    };
    socket.write = function (this: typeof socket, ...args: Parameters<typeof write>) {
      if (!corked) {
        corked = true;
        socket.cork();
        setImmediate(uncork);
      }
      return write.apply(this, args);
    } as typeof write;
  });
  return redis;
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/** A command as ioredis takes it: name, then arguments. */
export type RedisCommand = [string, ...Array<string | number>];

/**
 * Sends independent commands together and fails if any failed: all in flight at once, in
 * order on one connection, so one Redis gets them in one socket write (coalesceWrites) and
 * answers them in one round trip; a cluster sends each to its slot's node. Not an ioredis
 * pipeline: its bookkeeping cost the worker about twice the CPU of the same commands sent
 * as calls (docs/performance.md), and the write they leave in is the same.
 */
export function sendCommands(redis: RedisClient, commands: RedisCommand[]): Promise<unknown[]> {
  return Promise.all(commands.map(([name, ...args]) => redis.call(name, ...args)));
}

/** Where Redis is, as the operator configured it (credentials left out), and whether it is a cluster's seeds. */
export function redisLocation(settings: RedisSettings): { where: string; cluster: boolean } {
  if (settings.clusterNodes) return { where: settings.clusterNodes.map((n) => `${n.host}:${n.port}`).join(','), cluster: true };
  const url = new URL(settings.url);
  url.username = '';
  url.password = '';
  return { where: url.href.replace(/\/$/, ''), cluster: false };
}

/**
 * The process's first connection: it fails with RedisUnavailableError naming Redis and the
 * variable that points at it (ioredis alone says only `Connection is closed.`).
 */
export async function connectRedis(settings: RedisSettings, role: RedisRole, outages: RedisOutages, name = 'redis'): Promise<RedisClient> {
  const redis = createRedisClient(settings, redisOptions(role));
  let reason: Error | undefined;
  // Before the outage log's: the first connect's failure is said once, by the error thrown below.
  const first = (err: Error) => {
    reason = err;
  };
  redis.on('error', first);
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect(); // a refused login or no seed answering: stop the reconnect loop, the caller decides
    throw new RedisUnavailableError(redisLocation(settings), reason ?? err);
  }
  redis.off('error', first);
  outages.watch(name, redis);
  return redis;
}

/** A connection for BullMQ (which duplicates it for blocking commands); connects at once. */
export function bullConnection(settings: RedisSettings, role: RedisRole, outages: RedisOutages, name: string): RedisClient {
  const redis = createRedisClient(settings, { ...redisOptions(role), lazyConnect: false });
  outages.watch(name, redis);
  return redis;
}

/**
 * Warns when Redis is configured in a way that loses work: BullMQ needs
 * `maxmemory-policy noeviction`, and without AOF a restart forgets every run. On a
 * cluster every master is asked (CONFIG is per node). Managed Redis may refuse
 * CONFIG; then it says it could not check.
 */
export async function checkRedisSettings(redis: RedisClient, logger: Logger): Promise<string[]> {
  const problems: string[] = [];
  const nodes = isCluster(redis) ? redis.nodes('master') : [redis];
  try {
    for (const node of nodes) {
      const where = isCluster(redis) ? ` on ${node.options.host}:${node.options.port}` : '';
      const [, policy] = (await node.config('GET', 'maxmemory-policy')) as string[];
      const [, aof] = (await node.config('GET', 'appendonly')) as string[];
      if (policy !== 'noeviction')
        problems.push(`maxmemory-policy is ${policy}${where}; BullMQ needs noeviction, or Redis may evict jobs and locks`);
      if (aof !== 'yes') problems.push(`appendonly is off${where}; a Redis restart will lose runs, approvals and queued steps`);
    }
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

// The server fills in what `@rein/define` leaves open: an app's tool factory gets ioredis's client.
declare module '@rein/define/internal' {
  interface AppServiceTypes {
    redis: RedisClient;
  }
}
