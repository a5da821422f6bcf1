import { defineAgent } from '@rein/define/internal';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ModelRequest } from '../src/adapters/model/model-gateway.js';
import { type ArchivePool, createArchivePool } from '../src/adapters/postgres/archive-pool.js';
import { migrateArchive } from '../src/adapters/postgres/migrations.js';
import { RunArchive } from '../src/adapters/postgres/run-archive.js';
import { HotRuns } from '../src/adapters/redis/hot-runs.js';
import { createRunArchiving } from '../src/features/archive/run-archiving.js';
import { childRunId } from '../src/policy/step/sub-agents.js';
import { ARCHIVE_BACKLOG_KEY, ARCHIVE_HOT_KEY, runKeys } from '../src/shared/keys.js';
import { createMetrics, type Metrics, registerArchiveBacklog } from '../src/shared/metrics.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { hasPostgresBinaries, LocalPostgres } from '../src/testing/postgres-server.js';
import { type Harness, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

/**
 * The archive's write loop over real Redis and a PostgreSQL of its own (so it can be
 * killed): a document the archive refuses, an outage and its end, the backlog as every
 * process exports it, and a tree read after hot retention.
 */
describe.skipIf(!hasPostgresBinaries('the archive backlog'))('the archive backlog (Redis + a PostgreSQL of its own)', () => {
  let server: LocalPostgres;
  let pool: ArchivePool;
  let archive: RunArchive;

  beforeAll(async () => {
    server = await LocalPostgres.start();
    pool = createArchivePool(server.url, { connectTimeoutMs: 2_000, onError: () => {} });
    await migrateArchive(pool);
    archive = new RunArchive(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });

  /** The archiving as a worker runs it, hot retention due at once; `enqueued` records the archive jobs it enqueues. */
  const archivingOf = (t: Harness, enqueued: string[] = []) =>
    createRunArchiving({
      hot: new HotRuns(t.redis, t.store),
      archive,
      enqueue: async (_name, job) => {
        enqueued.push((job as { runId: string }).runId);
      },
      metrics: t.metrics,
      logger: t.logger,
      hotRetentionMs: 0,
      staleMs: 0,
    });

  /** Finished runs, each in the backlog as the finish hook leaves it. */
  async function finished(t: Harness, ...inputs: string[]): Promise<string[]> {
    const ids: string[] = [];
    for (const input of inputs) ids.push(await t.submit(input));
    await t.drain();
    const hot = new HotRuns(t.redis, t.store);
    for (const id of ids) await hot.pending(await t.store.require(id));
    return ids;
  }

  const answer = () => createFakeModel([{ content: 'Order 2024001 has shipped.' }]);
  const deadLetters = async () =>
    (await pool.query<{ run_id: string; sqlstate: string | null; doc: string }>('SELECT run_id, sqlstate, doc FROM rein.dead_letters'))
      .rows;
  const counter = async (m: Metrics) => (await m.archiveDeadLetters.get()).values[0]?.value ?? 0;

  it('a run the archive refuses goes to the dead letters, out of the backlog, its keys kept; the others are archived', async () => {
    const t = use(answer());
    const [bad, good] = (await finished(t, 'where is order 2024001?', 'and order A12345?')) as [string, string];
    // A document PostgreSQL refuses whatever the retry: a creation time in year 0 (timestamptz has none).
    const doc = await t.store.require(bad);
    await t.redis.hset(runKeys(bad).run, 'doc', JSON.stringify({ ...doc, createdAt: '0000-06-01T00:00:00.000Z' }));
    const archiving = archivingOf(t);

    expect(await archiving.archive(bad)).toBe('dead letter');
    expect(await archiving.archive(good)).toBe('written');
    const [letter, ...more] = await deadLetters();
    expect(more).toEqual([]);
    expect(letter).toMatchObject({ run_id: bad, sqlstate: '22008' });
    expect(JSON.parse(letter!.doc).run).toMatchObject({ id: bad, createdAt: '0000-06-01T00:00:00.000Z' });
    expect(await counter(t.metrics)).toBe(1);
    expect(await t.redis.zcard(ARCHIVE_BACKLOG_KEY)).toBe(0);
    // Hot retention drops the archived run's keys, never the refused one's (it is not in the hot set).
    expect(await t.redis.zscore(ARCHIVE_HOT_KEY, bad)).toBeNull();
    expect(await archiving.sweep()).toBe(1);
    expect(await t.redis.exists(runKeys(good).run)).toBe(0);
    expect(await t.redis.exists(runKeys(bad).run)).toBe(1);

    // Fixed (or changed) and archived again, it is no longer a dead letter.
    await t.redis.hset(runKeys(bad).run, 'doc', JSON.stringify(doc));
    await new HotRuns(t.redis, t.store).pending(doc);
    expect(await archiving.archive(bad)).toBe('written');
    expect(await deadLetters()).toEqual([]);
  });

  it('a refused run stays in the backlog while even its dead letter cannot be stored', async () => {
    const t = use(answer());
    const [bad] = (await finished(t, 'where is order 2024001?')) as [string];
    const doc = await t.store.require(bad);
    await t.redis.hset(runKeys(bad).run, 'doc', JSON.stringify({ ...doc, createdAt: '0000-06-01T00:00:00.000Z' }));
    const store = vi.spyOn(archive, 'deadLetter').mockRejectedValueOnce(new Error('connection terminated'));
    try {
      await expect(archivingOf(t).archive(bad)).rejects.toThrow('connection terminated');
    } finally {
      store.mockRestore();
    }
    expect(await t.redis.zscore(ARCHIVE_BACKLOG_KEY, bad)).not.toBeNull();
    expect(await counter(t.metrics)).toBe(0);
  });

  it('during an outage archive jobs end at once and nothing is enqueued; the first pass after it enqueues the whole backlog', async () => {
    const t = use(answer());
    const ids = await finished(t, 'order 2024001?', 'order A12345?');
    const enqueued: string[] = [];
    const archiving = archivingOf(t, enqueued);
    await server.kill();
    try {
      // No job waits out its own backoff: it ends, and its run stays in the backlog.
      for (const id of ids) expect(await archiving.archive(id)).toBe('archive unavailable');
      expect(await t.redis.zcard(ARCHIVE_BACKLOG_KEY)).toBe(2);
      await archiving.sweep();
      expect(enqueued).toEqual([]);
    } finally {
      await server.start();
    }
    // The first pass that finds the archive answering enqueues every run of the backlog.
    await expect
      .poll(async () => {
        await archiving.sweep();
        return [...new Set(enqueued)].sort();
      })
      .toEqual([...ids].sort());
    for (const id of ids) expect(await archiving.archive(id)).toBe('written');
    expect(await t.redis.zcard(ARCHIVE_BACKLOG_KEY)).toBe(0);
  });

  it('every process exports the fleet’s backlog, read from Redis when scraped, whichever ran the last pass', async () => {
    const t = use(answer());
    const hot = new HotRuns(t.redis, t.store);
    const workers = [createMetrics('worker-1'), createMetrics('worker-2')];
    for (const m of workers) registerArchiveBacklog(m, () => hot.backlogSize());
    const scrape = () =>
      Promise.all(workers.map(async (m) => (await m.registry.getSingleMetric('rein_archive_backlog')?.get())?.values[0]?.value));
    await t.redis.zadd(ARCHIVE_BACKLOG_KEY, 1, 'run-a', 2, 'run-b');
    expect(await scrape()).toEqual([2, 2]);
    await t.redis.zrem(ARCHIVE_BACKLOG_KEY, 'run-a', 'run-b');
    expect(await scrape()).toEqual([0, 0]);
  });

  it('a run of a tree reads the same after hot retention: the parent keeps its children and tree usage', async () => {
    const refunds = defineAgent({
      name: 'refunds',
      description: 'Issues refunds for orders.',
      instructions: 'You are the refunds agent.',
      tools: ['query_order'],
    });
    const isChild = (r: ModelRequest) => String(r.messages[0]?.content ?? '').startsWith('You are the refunds agent');
    const model = createFakeModel([
      (r) =>
        isChild(r)
          ? { content: 'Refunded 100.' }
          : r.messages.some((m) => m.role === 'tool')
            ? { content: 'Refund done.' }
            : { toolCalls: [toolCall('c1', 'call_refunds', { input: 'refund 100 on 2024001' })] },
    ]);
    const t = use(model, { agents: [refunds], profile: { agents: ['refunds'] }, archive });
    const [parent] = (await finished(t, 'please refund order 2024001')) as [string];
    const child = childRunId(parent, 0, 'c1');
    await new HotRuns(t.redis, t.store).pending(await t.store.require(child));
    const before = await Promise.all([t.runs.get(USER, parent), t.runs.get(USER, child)]);
    expect(before[0]).toMatchObject({ status: 'succeeded', children: [{ id: child, agent: 'refunds', status: 'succeeded' }] });
    expect(before[0].treeUsage?.totalTokens).toBeGreaterThan(before[0].usage.totalTokens);
    expect(before[1]).toMatchObject({ parentRunId: parent, treeUsage: { totalTokens: before[1].usage.totalTokens } });

    const archiving = archivingOf(t);
    for (const id of [parent, child]) expect(await archiving.archive(id)).toBe('written');
    expect(await archiving.sweep()).toBe(2);
    expect(await t.redis.exists(runKeys(parent).run, runKeys(parent).children, runKeys(parent).tree, runKeys(child).run)).toBe(0);
    expect(await Promise.all([t.runs.get(USER, parent), t.runs.get(USER, child)])).toEqual(before);
  });
});
