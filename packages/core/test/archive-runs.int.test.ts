import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ArchivePool, createArchivePool } from '../src/adapters/postgres/archive-pool.js';
import { migrateArchive } from '../src/adapters/postgres/migrations.js';
import { RunArchive } from '../src/adapters/postgres/run-archive.js';
import { searchRuns, usage } from '../src/adapters/postgres/run-search.js';
import { revisionOf } from '../src/adapters/redis/hot-runs.js';
import { runView } from '../src/features/runs/run-service.js';
import { startTestPostgres } from '../src/testing/postgres-server.js';
import { archiveDoc } from './archive-fixture.js';

const db = await startTestPostgres('the run archive');

describe.skipIf(!db)('the run archive (real PostgreSQL)', () => {
  let pool: ArchivePool;
  let archive: RunArchive;

  beforeAll(async () => {
    pool = createArchivePool(db!.url, { max: 8 });
    await migrateArchive(pool);
    archive = new RunArchive(pool);
  });
  beforeEach(async () => {
    await pool.query('TRUNCATE rein.runs CASCADE');
  });
  afterAll(async () => {
    await pool?.end();
    await db?.stop();
  });

  const counts = async () => {
    const { rows } = await pool.query(
      `SELECT (SELECT count(*) FROM rein.runs)::int AS runs, (SELECT count(*) FROM rein.steps)::int AS steps,
         (SELECT count(*) FROM rein.tool_calls)::int AS calls, (SELECT count(*) FROM rein.approvals)::int AS approvals,
         (SELECT count(*) FROM rein.events)::int AS events`,
    );
    return rows[0];
  };

  it('archived twice, and twice at once, the run is written once; reads give back what Redis held', async () => {
    const doc = archiveDoc({
      id: randomUUID(),
      steps: [
        { model: 'gpt-4o-mini', promptTokens: 100, completionTokens: 20, costUsd: 0.001 },
        { model: 'gpt-4o', promptTokens: 300, completionTokens: 50, costUsd: 0.01 },
      ],
    });
    doc.compensation = {
      schemaVersion: 1,
      round: 1,
      status: 'done',
      trigger: 'request',
      requestedBy: 'bob',
      steps: [],
      createdAt: doc.run.updatedAt,
      updatedAt: doc.run.updatedAt,
    };
    expect(await archive.archiveRun(doc)).toBe(true);
    expect(await archive.archiveRun(doc)).toBe(false);
    expect(await Promise.all([archive.archiveRun(doc), archive.archiveRun(doc)])).toEqual([false, false]);
    expect(await counts()).toEqual({ runs: 1, steps: 2, calls: 2, approvals: 1, events: 4 });

    const twin = archiveDoc({ id: randomUUID() });
    expect(
      (await Promise.all([archive.archiveRun(twin), archive.archiveRun(twin), archive.archiveRun(twin)])).filter(Boolean),
    ).toHaveLength(1);
    expect(await counts()).toEqual({ runs: 2, steps: 3, calls: 4, approvals: 2, events: 8 });

    const read = await archive.readRun('acme', doc.run.id);
    expect(read).toEqual({ run: doc.run, approvals: doc.approvals, compensation: doc.compensation, tree: null });
    // The view the API answers is the same whichever store the run came from.
    expect(runView(read!.run, read!.approvals)).toEqual(runView(doc.run, doc.approvals));
    expect(await archive.readTrace('acme', doc.run.id)).toEqual({ run: doc.run, steps: doc.steps, approvals: doc.approvals });

    expect(await archive.readEvents('acme', doc.run.id, '0')).toEqual(doc.events);
    // Resuming after an entry id, as XREAD does.
    expect(await archive.readEvents('acme', doc.run.id, doc.events[1]!.id)).toEqual(doc.events.slice(2));
    expect(await archive.readEvents('acme', doc.run.id, doc.events[3]!.id)).toEqual([]);
  });

  it('a later revision replaces the archived one (a saga after the finish); an equal or older one, or another tenant, writes nothing', async () => {
    const first = archiveDoc({ id: randomUUID() });
    expect(await archive.archiveRun(first)).toBe(true);
    const later = structuredClone(first);
    later.compensation = {
      schemaVersion: 1,
      round: 1,
      status: 'done',
      trigger: 'auto',
      requestedBy: 'system',
      steps: [],
      createdAt: first.run.updatedAt,
      updatedAt: new Date(Date.parse(first.run.updatedAt) + 1_000).toISOString(),
    };
    later.events.push({
      id: '9999999999999-0',
      event: { type: 'compensation.finished', runId: first.run.id, at: first.run.updatedAt, data: { round: 1, status: 'done' } },
    });
    later.revision = revisionOf(later);
    expect(await archive.archiveRun(later)).toBe(true);
    expect(await archive.archiveRun(first)).toBe(false); // a late, older write
    expect(await archive.archiveRun(later)).toBe(false);
    expect((await archive.readRun('acme', first.run.id))?.compensation?.status).toBe('done');
    expect(await archive.readEvents('acme', first.run.id, '0')).toHaveLength(later.events.length);
    expect(await archive.revision('acme', first.run.id)).toEqual(later.revision);
    expect(await counts()).toEqual({ runs: 1, steps: 1, calls: 2, approvals: 1, events: 5 });
    // The same id under another tenant (a forged document) never overwrites this one.
    const forged = structuredClone(later);
    forged.run.tenantId = 'globex';
    forged.revision = [...later.revision.slice(0, -1), (later.revision.at(-1) ?? 0) + 1];
    expect(await archive.archiveRun(forged)).toBe(false);
    expect(await archive.readRun('globex', first.run.id)).toBeNull();
  });

  it('a run that is not finished is refused; a write that fails leaves nothing', async () => {
    const live = archiveDoc({ id: randomUUID(), status: 'running' });
    await expect(archive.archiveRun(live)).rejects.toMatchObject({ code: 'archive_run_not_finished' });
    const bad = archiveDoc({ id: randomUUID() });
    bad.events.push({ ...bad.events[0]! }); // a duplicate stream id: the events insert fails after the run's row
    await expect(archive.archiveRun(bad)).rejects.toThrow(/duplicate key/);
    expect(await counts()).toEqual({ runs: 0, steps: 0, calls: 0, approvals: 0, events: 0 });
    expect(await archive.archiveRun(archiveDoc({ id: bad.run.id }))).toBe(true);
  });

  it('a NUL in a string is archived as U+FFFD instead of failing the run forever', async () => {
    const doc = archiveDoc({ id: randomUUID(), input: 'a\u0000b \\u0000 literal' });
    doc.steps[0]!.toolCalls[0]!.observation = 'x\u0000y';
    doc.steps[0]!.toolCalls[0]!.arguments = { q: '\u0000' };
    expect(await archive.archiveRun(doc)).toBe(true);
    const trace = await archive.readTrace('acme', doc.run.id);
    expect(trace?.run.input).toBe('a\uFFFDb \\u0000 literal');
    expect(trace?.steps[0]?.toolCalls[0]).toMatchObject({ observation: 'x\uFFFDy', arguments: { q: '\uFFFD' } });
  });

  it('a lone surrogate (from a model or a tool) is archived as U+FFFD; a paired one and an escaped backslash stay as they are', async () => {
    const doc = archiveDoc({ id: randomUUID(), finalAnswer: 'a\ud800b \udc00 😀 \\ud800 literal' });
    doc.steps[0]!.toolCalls[0]!.observation = 'x\udbffy';
    doc.steps[0]!.toolCalls[0]!.arguments = { ['k\ude00']: '\ud83d' };
    expect(await archive.archiveRun(doc)).toBe(true);
    const trace = await archive.readTrace('acme', doc.run.id);
    expect(trace?.run.finalAnswer).toBe('a\uFFFDb \uFFFD 😀 \\ud800 literal');
    expect(trace?.steps[0]?.toolCalls[0]).toMatchObject({ observation: 'x\uFFFDy', arguments: { ['k\uFFFD']: '\uFFFD' } });
  });

  it('another tenant reads, searches and sums nothing of it', async () => {
    const doc = archiveDoc({ id: randomUUID(), tenantId: 'acme' });
    await archive.archiveRun(doc);
    expect(await archive.readRun('globex', doc.run.id)).toBeNull();
    expect(await archive.readTrace('globex', doc.run.id)).toBeNull();
    expect(await archive.readEvents('globex', doc.run.id, '0')).toEqual([]);
    expect(await archive.has('globex', doc.run.id)).toBe(false);
    expect(await archive.has('acme', doc.run.id)).toBe(true);
    expect((await searchRuns(pool, { tenantId: 'globex', limit: 10 })).runs).toEqual([]);
    expect((await searchRuns(pool, { tenantId: 'globex', q: '张三', limit: 10 })).runs).toEqual([]);
    expect(await usage(pool, { tenantId: 'globex', from: '2026-01-01T00:00:00Z', to: '2027-01-01T00:00:00Z', groupBy: 'agent' })).toEqual(
      [],
    );
  });

  it('search finds Chinese and English text in inputs and answers, with the filters, newest first, a page at a time', async () => {
    const at = (minute: number) => `2026-11-02T08:${String(minute).padStart(2, '0')}:00.000Z`;
    const docs = [
      archiveDoc({ id: 'run-a', input: '帮我查一下张三的订单 2024001', finalAnswer: '已发货', createdAt: at(1) }),
      archiveDoc({
        id: 'run-b',
        input: 'Where is my REFUND for order 7?',
        finalAnswer: 'Refund issued to 李四',
        createdAt: at(2),
        userId: 'bob',
      }),
      archiveDoc({
        id: 'run-c',
        input: '张三丰 wants 50% off_sale',
        finalAnswer: 'no',
        createdAt: at(3),
        agent: 'sales',
        status: 'failed',
      }),
      archiveDoc({ id: 'run-d', input: 'unrelated', finalAnswer: 'nothing here', createdAt: at(4) }),
    ];
    for (const d of docs) await archive.archiveRun(d);
    const ids = async (q: Parameters<typeof searchRuns>[1]) => (await searchRuns(pool, q)).runs.map((r) => r.id);
    const s = { tenantId: 'acme', limit: 10 };

    expect(await ids({ ...s, q: '张三' })).toEqual(['run-c', 'run-a']);
    expect(await ids({ ...s, q: '2024001' })).toEqual(['run-a']);
    expect(await ids({ ...s, q: '李四' })).toEqual(['run-b']); // in the final answer
    expect(await ids({ ...s, q: 'refund' })).toEqual(['run-b']); // case-insensitive
    expect(await ids({ ...s, q: '50%' })).toEqual(['run-c']); // % and _ are literal
    expect(await ids({ ...s, q: 'o_f' })).toEqual([]); // a wildcard `_` would match 'off'
    expect(await ids({ ...s, q: '张三', agent: 'sales' })).toEqual(['run-c']);
    expect(await ids({ ...s, q: '张三', status: 'succeeded' })).toEqual(['run-a']);
    expect(await ids({ ...s, userId: 'bob' })).toEqual(['run-b']);
    expect(await ids({ ...s, from: at(2), to: at(4) })).toEqual(['run-c', 'run-b']);

    const first = await searchRuns(pool, { ...s, limit: 3 });
    expect(first.runs.map((r) => r.id)).toEqual(['run-d', 'run-c', 'run-b']);
    const second = await searchRuns(pool, { ...s, limit: 3, cursor: first.nextCursor });
    expect(second.runs.map((r) => r.id)).toEqual(['run-a']);
    expect(second.nextCursor).toBeUndefined();
    await expect(searchRuns(pool, { ...s, cursor: 'garbage' })).rejects.toMatchObject({ code: 'invalid_cursor' });
    // A forged cursor PostgreSQL would refuse (year 0, a NUL in the id) is the caller's error, not the archive's.
    const forged = (at: string, id: string) => Buffer.from(JSON.stringify([at, id])).toString('base64url');
    for (const cursor of [forged('0000-06-01T00:00:00Z', 'run-a'), forged('2026-01-01T00:00:00Z', 'run\u0000a')])
      await expect(searchRuns(pool, { ...s, cursor })).rejects.toMatchObject({ code: 'invalid_cursor' });
  });

  it('text search of three characters or more, Chinese included, can be served by the trigram index', async () => {
    const client = await pool.connect();
    try {
      await client.query('SET enable_seqscan = off');
      for (const q of ['%张三丰%', '%2024001%']) {
        const { rows } = await client.query('EXPLAIN SELECT id FROM rein.runs WHERE search_text ILIKE $1', [q]);
        expect(rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('runs_search');
      }
    } finally {
      await client.query('RESET enable_seqscan');
      client.release();
    }
  });

  it('usage sums equal the runs’ own usage, by agent, user, day and model, with duration percentiles', async () => {
    const docs = [
      archiveDoc({
        id: 'u1',
        agent: 'orders',
        durationMs: 1_000,
        createdAt: '2026-11-01T23:59:00.000Z',
        steps: [
          { model: 'm-small', promptTokens: 10, completionTokens: 1, costUsd: 0.25 },
          { model: 'm-big', promptTokens: 100, completionTokens: 10, costUsd: 0.5 },
        ],
      }),
      archiveDoc({ id: 'u2', agent: 'orders', durationMs: 3_000, status: 'failed', createdAt: '2026-11-02T00:01:00.000Z' }),
      archiveDoc({ id: 'u3', agent: 'sales', userId: 'bob', durationMs: 5_000, createdAt: '2026-11-02T10:00:00.000Z' }),
      archiveDoc({ id: 'u4', agent: 'sales', createdAt: '2026-12-05T10:00:00.000Z' }), // outside the window
    ];
    for (const d of docs) await archive.archiveRun(d);
    const window = { tenantId: 'acme', from: '2026-11-01T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z' };
    const inWindow = docs.slice(0, 3).map((d) => d.run);

    const byAgent = await usage(pool, { ...window, groupBy: 'agent' });
    expect(byAgent).toEqual([
      {
        key: 'orders',
        runs: 2,
        failed: 1,
        steps: 3,
        promptTokens: 210,
        completionTokens: 31,
        costUsd: 0.751,
        p50DurationMs: 2_000,
        p95DurationMs: 2_900,
      },
      {
        key: 'sales',
        runs: 1,
        failed: 0,
        steps: 1,
        promptTokens: 100,
        completionTokens: 20,
        costUsd: 0.001,
        p50DurationMs: 5_000,
        p95DurationMs: 5_000,
      },
    ]);
    const total = (rows: typeof byAgent, k: 'promptTokens' | 'completionTokens' | 'runs' | 'steps') => rows.reduce((n, r) => n + r[k], 0);
    for (const groupBy of ['agent', 'user', 'day'] as const) {
      const rows = await usage(pool, { ...window, groupBy });
      expect(total(rows, 'runs')).toBe(3);
      expect(total(rows, 'steps')).toBe(inWindow.reduce((n, r) => n + r.step, 0));
      expect(total(rows, 'promptTokens')).toBe(inWindow.reduce((n, r) => n + r.usage.promptTokens, 0));
      expect(total(rows, 'completionTokens')).toBe(inWindow.reduce((n, r) => n + r.usage.completionTokens, 0));
      expect(rows.reduce((n, r) => n + r.costUsd, 0)).toBeCloseTo(
        inWindow.reduce((n, r) => n + r.costUsd, 0),
        10,
      );
    }
    expect((await usage(pool, { ...window, groupBy: 'day' })).map((r) => [r.key, r.runs])).toEqual([
      ['2026-11-01', 1],
      ['2026-11-02', 2],
    ]);
    expect((await usage(pool, { ...window, groupBy: 'user' })).map((r) => [r.key, r.runs])).toEqual([
      ['alice', 2],
      ['bob', 1],
    ]);
    // By model: the steps each model answered; a run using two models counts for each.
    expect(await usage(pool, { ...window, groupBy: 'model' })).toEqual([
      {
        key: 'gpt-4o-mini',
        runs: 2,
        failed: 1,
        steps: 2,
        promptTokens: 200,
        completionTokens: 40,
        costUsd: 0.002,
        p50DurationMs: 4_000,
        p95DurationMs: 4_900,
      },
      {
        key: 'm-big',
        runs: 1,
        failed: 0,
        steps: 1,
        promptTokens: 100,
        completionTokens: 10,
        costUsd: 0.5,
        p50DurationMs: 1_000,
        p95DurationMs: 1_000,
      },
      {
        key: 'm-small',
        runs: 1,
        failed: 0,
        steps: 1,
        promptTokens: 10,
        completionTokens: 1,
        costUsd: 0.25,
        p50DurationMs: 1_000,
        p95DurationMs: 1_000,
      },
    ]);
  });

  it('usage by mode sets replays apart from live runs', async () => {
    const live = archiveDoc({ id: 'm1', tenantId: 'modes' });
    const replayed = archiveDoc({ id: 'm2', tenantId: 'modes' });
    await archive.archiveRun(live);
    await archive.archiveRun({ ...replayed, run: { ...replayed.run, mode: 'replay', replayOf: 'm1' } });
    const rows = await usage(pool, { tenantId: 'modes', from: '2026-01-01T00:00:00Z', to: '2027-01-01T00:00:00Z', groupBy: 'mode' });
    expect(rows.map((r) => [r.key, r.runs, r.promptTokens])).toEqual([
      ['live', 1, live.run.usage.promptTokens],
      ['replay', 1, replayed.run.usage.promptTokens],
    ]);
  });
});
