import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StepScheduler } from '../src/adapters/queue/job-catalog.js';
import { checkRedisSettings, connectRedis, createRedisClient, type RedisClient, type RedisSettings } from '../src/adapters/redis/redis.js';
import { RedisOutages } from '../src/adapters/redis/redis-outages.js';
import { StreamHub } from '../src/adapters/redis/stream-hub.js';
import { runKeys } from '../src/shared/keys.js';
import { startTestCluster, type TestCluster } from '../src/testing/index.js';
import { readsProcessed } from './harness.js';

const silent = pino({ level: 'silent' });
let cluster: TestCluster;
let redis: RedisClient;
let settings: RedisSettings;
beforeAll(async () => {
  cluster = await startTestCluster(); // no AOF: the settings check must say so, node by node
  settings = {
    url: 'redis://127.0.0.1:1',
    clusterNodes: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    tls: 'off',
  };
  redis = await connectRedis(settings, 'producer', new RedisOutages(silent));
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

/** Run ids whose keys live on different masters. */
async function idsOnDistinctNodes(n: number): Promise<string[]> {
  const byPort = new Map<number, string>();
  for (let i = 0; byPort.size < n; i++) {
    const id = `run-${i}`;
    const node = await cluster.nodeFor(runKeys(id).events);
    if (!byPort.has(node.port)) byPort.set(node.port, id);
  }
  return [...byPort.values()];
}

describe('on a Redis Cluster', () => {
  it('logs in as an ACL user on every node it discovers, not only the seed', async () => {
    for (const node of cluster.nodes) {
      const admin = new Redis(node.port, '127.0.0.1');
      await admin.acl('SETUSER', 'rein', 'on', '>s3cret', '~*', '&*', '+@all');
      admin.disconnect();
    }
    const seedOnly = { ...settings, clusterNodes: settings.clusterNodes?.slice(0, 1) };
    const asRein = await connectRedis({ ...seedOnly, username: 'rein', password: 's3cret' }, 'producer', new RedisOutages(silent));
    try {
      const [a, b, c] = await idsOnDistinctNodes(3);
      for (const id of [a, b, c]) await asRein.set(runKeys(id as string).run, 'x');
      expect(String(await asRein.acl('WHOAMI'))).toBe('rein');
      expect(await Promise.all([a, b, c].map((id) => asRein.get(runKeys(id as string).run)))).toEqual(['x', 'x', 'x']);
    } finally {
      asRein.disconnect();
    }
    const wrong = connectRedis({ ...seedOnly, username: 'rein', password: 'wrong' }, 'producer', new RedisOutages(silent));
    await expect(wrong).rejects.toThrow();
  });

  it("sends a node's commands of one turn of the event loop as one write", async () => {
    const keys = Array.from({ length: 10 }, (_, i) => `{coalesce}:${i}`);
    await redis.set(keys[0] as string, 'v'); // the client now knows the slot's node
    const node = await cluster.nodeFor(keys[0] as string);
    const admin = new Redis(node.port, '127.0.0.1');
    try {
      const before = await readsProcessed(admin);
      await Promise.all(keys.map((key) => redis.get(key)));
      // The ten GETs, then the INFO: 2, or 3 if the client's periodic slot refresh lands in between (11 if uncoalesced).
      expect((await readsProcessed(admin)) - before).toBeLessThanOrEqual(3);
    } finally {
      admin.disconnect();
    }
  });

  it('checks maxmemory-policy and AOF on every master', async () => {
    const problems = await checkRedisSettings(redis, silent);
    const aof = problems.filter((p) => p.startsWith('appendonly is off on 127.0.0.1:'));
    expect(aof).toHaveLength(3);
  });

  it('wakes stream readers of runs on different nodes (one XREAD cannot span their slots)', async () => {
    const hub = new StreamHub(redis, silent);
    try {
      const [a, b, c] = await idsOnDistinctNodes(3);
      const keys = [a, b, c].map((id) => runKeys(id as string).events);
      const waits = keys.map((key) => hub.wait(key, '0-0', 20_000));
      await redis.xadd(keys[1] as string, '*', 'e', '{}');
      await redis.xadd(keys[2] as string, '*', 'e', '{}');
      expect(await waits[1]).toBe(true);
      expect(await waits[2]).toBe(true);
      // The first key, quiet so far, is still watched: a write to it wakes a new waiter.
      const late = hub.wait(keys[0] as string, '0-0', 20_000);
      await redis.xadd(keys[0] as string, '*', 'e', '{}');
      expect(await late).toBe(true);
    } finally {
      hub.close();
    }
  });

  it("puts each run's jobs on its own shard queue, the shards on different slots", async () => {
    const bull = await connectRedis(settings, 'worker', new RedisOutages(silent));
    const scheduler = new StepScheduler(bull, 3, 3);
    try {
      const ids = Array.from({ length: 30 }, (_, i) => `shard-run-${i}`);
      for (const id of ids) await scheduler.enqueue('step', { runId: id, step: 0 });
      for (const id of ids) {
        expect(await scheduler.queueOf(id).getJob(`${id}-0`)).toBeTruthy();
        const others = scheduler.queues.filter((q) => q !== scheduler.queueOf(id));
        for (const q of others) expect(await q.getJob(`${id}-0`)).toBeFalsy();
      }
      const counts = await Promise.all(scheduler.queues.map((q) => q.count()));
      expect(counts.every((c) => c > 0)).toBe(true);
      const slots = await Promise.all(scheduler.queues.map((q) => redis.cluster('KEYSLOT', `${q.opts.prefix}:${q.name}:wait`)));
      expect(new Set(slots).size).toBe(3);
    } finally {
      await scheduler.close();
      bull.disconnect();
    }
  });
});

describe('on a Redis Cluster with a master down and no replica', () => {
  // BullMQ rebuilds a worker's blocking connection with disconnect() + connect() and awaits
  // the connect. While a master is down, CLUSTER INFO says cluster_state:fail; an ioredis
  // ready check then never lets that connect() settle, and the worker stops fetching jobs
  // for good (the chaos suite's master-kill scenario). A hang here fails on the test timeout.
  it('connects anyway, and reaches the slots of the master once it is back', async () => {
    const down = await startTestCluster();
    const client = createRedisClient(
      {
        url: 'redis://127.0.0.1:1',
        clusterNodes: down.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
        tls: 'off',
      },
      { maxRetriesPerRequest: null, lazyConnect: true },
    );
    client.on('error', () => {});
    try {
      const victim = down.nodes[0] as (typeof down.nodes)[number];
      const keyOnVictim = await (async () => {
        for (let i = 0; ; i++) if ((await down.nodeFor(`k${i}`)).port === victim.port) return `k${i}`;
      })();
      await victim.kill();
      const witness = new Redis((down.nodes[1] as (typeof down.nodes)[number]).port, '127.0.0.1');
      while (!String(await witness.cluster('INFO')).includes('cluster_state:fail')) await new Promise((r) => setTimeout(r, 100));
      witness.disconnect();

      await client.connect();
      expect(client.status).toBe('ready');

      await victim.start();
      await down.waitHealthy();
      await client.set(keyOnVictim, 'back');
      expect(await client.get(keyOnVictim)).toBe('back');
    } finally {
      client.disconnect();
      await down.stop();
    }
  });
});
