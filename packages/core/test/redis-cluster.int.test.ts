import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKeys } from '../src/keys.js';
import { StepScheduler } from '../src/queue/job-catalog.js';
import { checkRedisSettings, connectRedis, type RedisClient, type RedisSettings } from '../src/redis.js';
import { StreamHub } from '../src/store/stream-hub.js';
import { startTestCluster, type TestCluster } from '../src/testing/index.js';

const silent = pino({ level: 'silent' });
let cluster: TestCluster;
let redis: RedisClient;
let settings: RedisSettings;
beforeAll(async () => {
  cluster = await startTestCluster(); // no AOF: the settings check must say so, node by node
  settings = {
    REDIS_URL: 'redis://127.0.0.1:1',
    REDIS_CLUSTER_NODES: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    REDIS_TLS: 'off',
  };
  redis = await connectRedis(settings, 'producer', silent);
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
    const seedOnly = { ...settings, REDIS_CLUSTER_NODES: settings.REDIS_CLUSTER_NODES?.slice(0, 1) };
    const asRein = await connectRedis({ ...seedOnly, REDIS_USERNAME: 'rein', REDIS_PASSWORD: 's3cret' }, 'producer', silent);
    try {
      const [a, b, c] = await idsOnDistinctNodes(3);
      for (const id of [a, b, c]) await asRein.set(runKeys(id as string).run, 'x');
      expect(String(await asRein.acl('WHOAMI'))).toBe('rein');
      expect(await Promise.all([a, b, c].map((id) => asRein.get(runKeys(id as string).run)))).toEqual(['x', 'x', 'x']);
    } finally {
      asRein.disconnect();
    }
    const wrong = connectRedis({ ...seedOnly, REDIS_USERNAME: 'rein', REDIS_PASSWORD: 'wrong' }, 'producer', silent);
    await expect(wrong).rejects.toThrow();
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
    const bull = await connectRedis(settings, 'worker', silent);
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
