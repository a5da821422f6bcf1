import type { RedisClient } from '@rein/core';
import { createRedisClient, isCluster } from '@rein/core/internal';
import { type LocalRedis, startTestCluster, startTestRedis, type TestCluster, type TestRedis } from '@rein/core/testing';

export type TopologyKind = 'single' | 'cluster';

/** A Redis the suite owns, single node or a 3-master cluster, with what fleets and tests need to use it. */
export interface Topology {
  kind: TopologyKind;
  /** Spread into startFleet's options. */
  fleet: { redisUrl: string; clusterNodes?: string };
  /** The test's own connection (cluster-aware on a cluster). */
  client: RedisClient;
  /** The cluster, for fault scenarios (undefined on a single node). */
  cluster: TestCluster | undefined;
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export interface TopologyOptions {
  appendOnly?: boolean;
  /** Replicas per master (cluster only). */
  replicas?: number;
  /** A single node the test wants to stop and start itself. */
  local?: LocalRedis;
}

/** Starts the Redis for `kind`; on a cluster the seeds go to REDIS_CLUSTER_NODES. */
export async function startTopology(kind: TopologyKind, opts: TopologyOptions = {}): Promise<Topology> {
  if (kind === 'single') {
    const redis: TestRedis = opts.local ?? (await startTestRedis({ appendOnly: opts.appendOnly ?? false }));
    const client = createRedisClient({ url: redis.url, tls: 'off' }, { maxRetriesPerRequest: null });
    client.on('error', () => {}); // fault scenarios stop Redis on purpose
    return {
      kind,
      fleet: { redisUrl: redis.url },
      client,
      cluster: undefined,
      flush: async () => void (await client.flushall()),
      async stop() {
        client.disconnect();
        await redis.stop();
      },
    };
  }
  const cluster = await startTestCluster({ appendOnly: opts.appendOnly ?? false, replicas: opts.replicas ?? 0 });
  const seeds = cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  const client = createRedisClient({ url: 'redis://127.0.0.1:6379', clusterNodes: seeds, tls: 'off' }, { maxRetriesPerRequest: null });
  client.on('error', () => {});
  return {
    kind,
    fleet: { redisUrl: `redis://127.0.0.1:${cluster.nodes[0]?.port}`, clusterNodes: cluster.seeds },
    client,
    cluster,
    // FLUSHALL is per node: every master forgets its slots' keys. Until the client is ready
    // its node list is the seeds (replicas included), so wait for the slot map first.
    flush: async () => {
      if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
      const masters = isCluster(client) ? client.nodes('master') : [];
      await Promise.all(masters.map((m) => m.flushall()));
    },
    async stop() {
      client.disconnect();
      await cluster.stop();
    },
  };
}
