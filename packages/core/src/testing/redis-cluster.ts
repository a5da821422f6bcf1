import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { LocalRedis } from './redis-server.js';

export interface TestClusterOptions {
  /** Masters the 16384 slots are split over (at least 3, as Redis Cluster requires). */
  masters?: number;
  /** Replicas per master; with one, killing a master fails over to its replica. */
  replicas?: number;
  /** Keep an append-only file on every node (a restarted node keeps its data). */
  appendOnly?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A local Redis Cluster that a test owns: `redis-server --cluster-enabled yes` nodes on
 * free ports, joined by `redis-cli --cluster create`. Tests stop, kill and restart
 * single nodes (`nodes[i]`) for fault scenarios.
 */
export class TestCluster {
  private constructor(readonly nodes: LocalRedis[]) {}

  static async start(opts: TestClusterOptions = {}): Promise<TestCluster> {
    const masters = opts.masters ?? 3;
    const replicas = opts.replicas ?? 0;
    const nodes = await Promise.all(
      Array.from({ length: masters * (1 + replicas) }, () => LocalRedis.start({ appendOnly: opts.appendOnly ?? false, cluster: true })),
    );
    const cluster = new TestCluster(nodes);
    try {
      await redisCli([
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
      await cluster.waitHealthy();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** The value of REDIS_CLUSTER_NODES: every node as a seed. */
  get seeds(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  /** The node serving `key`'s slot right now (after a failover, a former replica). */
  async nodeFor(key: string): Promise<LocalRedis> {
    const asker = this.nodes.find((n) => n.running);
    if (!asker) throw new Error('no node of the test cluster is running');
    const [slot, ranges] = await onNode(asker, async (r) => [Number(await r.cluster('KEYSLOT', key)), await r.cluster('SLOTS')] as const);
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    const node = this.nodes.find((n) => n.port === range?.[2]?.[1]);
    if (!node) throw new Error(`no node serves slot ${slot}`);
    return node;
  }

  /**
   * Resolves once every running node reports `cluster_state:ok` and every replica is in
   * sync with its master (a replica that never synced refuses to fail over). Bounded.
   */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(
        this.nodes
          .filter((n) => n.running)
          .map((n) => onNode(n, async (r) => `${await r.cluster('INFO')}\n${await r.info('replication')}`).catch(() => '')),
      );
      const healthy = (s: string) => s.includes('cluster_state:ok') && (!s.includes('role:slave') || s.includes('master_link_status:up'));
      if (states.every(healthy)) return;
      if (Date.now() > until) throw new Error(`test cluster not healthy after ${timeoutMs} ms`);
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}

export function startTestCluster(opts: TestClusterOptions = {}): Promise<TestCluster> {
  return TestCluster.start(opts);
}

/** One short-lived connection to one node (not cluster-aware: asks that node only). */
async function onNode<T>(node: LocalRedis, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(node.port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

function redisCli(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.once('error', (err) => reject(new Error(`cannot run redis-cli (is Redis 7 installed?): ${err.message}`)));
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`redis-cli ${args.join(' ')} exited ${code}:\n${out}`))));
  });
}
