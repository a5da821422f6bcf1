import { describe, expect, it } from 'vitest';
import { shardOf } from '../src/adapters/queue/job-catalog.js';
import { loadConfig, workerShards } from '../src/shared/config.js';
import { ConfigError } from '../src/shared/errors.js';
import { queuePrefix } from '../src/shared/keys.js';
import { optionsFromEnv } from '../src/shared/options.js';

describe('Redis Cluster settings', () => {
  it('reads REDIS_CLUSTER_NODES as host:port seeds, IPv6 in brackets', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: 'redis-0:6379, 10.0.0.2:7000,[::1]:7001' });
    expect(config.REDIS_CLUSTER_NODES).toEqual([
      { host: 'redis-0', port: 6379 },
      { host: '10.0.0.2', port: 7000 },
      { host: '::1', port: 7001 },
    ]);
  });

  it('refuses a seed that is not host:port, naming the variable', () => {
    for (const bad of ['redis-0', 'redis://redis-0:6379', 'user:pw@redis-0:6379', 'redis-0:99999']) {
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: bad })).toThrow(/REDIS_CLUSTER_NODES/);
    }
  });

  it('takes an ACL user, a password and TLS', () => {
    const config = loadConfig({ REDIS_USERNAME: 'rein', REDIS_PASSWORD: 's3cret', REDIS_TLS: 'on' });
    expect(config).toMatchObject({ REDIS_USERNAME: 'rein', REDIS_PASSWORD: 's3cret', REDIS_TLS: 'on' });
    expect(() => loadConfig({ REDIS_TLS: 'yes' })).toThrow(/REDIS_TLS/);
  });
});

describe('step-queue shards', () => {
  it('consumes every shard by default, or the listed ones and ranges', () => {
    expect(workerShards(optionsFromEnv({ REIN_QUEUE_SHARDS: '4' }).queue)).toEqual([0, 1, 2, 3]);
    expect(workerShards(optionsFromEnv({ REIN_QUEUE_SHARDS: '8', REIN_WORKER_SHARDS: '5-6,0,6' }).queue)).toEqual([0, 5, 6]);
    expect(() => loadConfig({ REIN_WORKER_SHARDS: '3-1' })).toThrow(/REIN_WORKER_SHARDS/);
    expect(() => loadConfig({ REIN_WORKER_SHARDS: ',' })).toThrow(/REIN_WORKER_SHARDS/);
  });

  it('puts a run on one shard, always the same, and spreads runs over all shards', () => {
    const ids = Array.from({ length: 3000 }, (_, i) => `run-${i.toString(36)}-${(i * 7919).toString(16)}`);
    for (const id of ids.slice(0, 50)) expect(shardOf(id, 3)).toBe(shardOf(id, 3));
    const perShard = [0, 0, 0];
    for (const id of ids) perShard[shardOf(id, 3)] = (perShard[shardOf(id, 3)] ?? 0) + 1;
    // Every shard gets a fair part (a third each, give or take a lot).
    for (const n of perShard) expect(n).toBeGreaterThan(600);
    expect(shardOf('any-run', 1)).toBe(0);
  });

  it('gives every shard its own hash tag, shard 0 keeping the single queue of before', () => {
    expect(queuePrefix(0)).toBe('{rein}');
    expect(new Set([0, 1, 2, 3].map(queuePrefix)).size).toBe(4);
    expect(queuePrefix(2)).toBe('{rein-2}');
  });
});
