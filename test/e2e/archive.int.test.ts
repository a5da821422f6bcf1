import { createApiApp } from '@rein/api';
import { createApproverApp } from '@rein/approver';
import { optionsFromEnv } from '@rein/core';
import {
  ARCHIVE_BACKLOG_KEY,
  createArchivePool,
  createRunArchiving,
  createRuntime,
  HotRuns,
  migrateArchive,
  type Runtime,
  runKeys,
  type WorkerRuntime,
} from '@rein/core/internal';
import { createFakeModel, startTestPostgres, startTestRedis, type TestRedis, toolCall } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import { startWorker } from '@rein/worker';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const USER = { key: 'archive-user-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const OTHER_USER = { key: 'archive-bob-key', tenantId: 'acme', userId: 'bob', roles: ['user'] };
const APPROVER = { key: 'archive-approver-key', tenantId: 'acme', userId: 'carol', roles: ['approver'] };
const OTHER_TENANT = { key: 'archive-globex-key', tenantId: 'globex', userId: 'alice', roles: ['approver'] };
const KEYS = [USER, OTHER_USER, APPROVER, OTHER_TENANT];

const db = await startTestPostgres('the archive end to end');

/**
 * The archive wired end to end: a real worker finishes runs and archives them through
 * the queue, the API and the approver read them before and after their Redis keys are
 * dropped, search and usage come from PostgreSQL.
 */
describe.skipIf(!db)('the run archive, end to end (Redis + PostgreSQL)', () => {
  let redis: TestRedis;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let wrt: WorkerRuntime;
  let rt: Runtime;
  let api: FastifyInstance;
  let approver: FastifyInstance;

  beforeAll(async () => {
    redis = await startTestRedis();
    const pool = createArchivePool(db!.url);
    await migrateArchive(pool);
    await pool.end();
    const env = {
      REDIS_URL: redis.url,
      REIN_ARCHIVE_URL: db!.url,
      REIN_API_KEYS: JSON.stringify(KEYS),
      LOG_LEVEL: 'silent',
      REIN_REAPER_INTERVAL_MS: '300',
      REIN_REAPER_STALE_MS: '500',
      WORKER_METRICS_PORT: '0',
      REIN_BIND_HOST: '127.0.0.1',
    };
    // Every run: look the order up, then answer (a run whose input mentions a note asks to write one first).
    const model = createFakeModel([
      (req) =>
        req.messages.some((m) => m.role === 'tool')
          ? { content: 'Order 2024001 of 张三 has shipped.' }
          : String(req.messages.at(-1)?.content).includes('note')
            ? { toolCalls: [toolCall('c1', 'update_order_note', { orderNo: '2024001', note: 'call back' })] }
            : { toolCalls: [toolCall('c1', 'query_order', { orderNo: '2024001' })] },
    ]);
    worker = await startWorker(orderApp, { options: optionsFromEnv(env), handleSignals: false, model: () => model });
    wrt = worker.runtime;
    rt = await createRuntime(optionsFromEnv(env), 'api-test', 'producer', orderApp);
    api = createApiApp(rt);
    approver = createApproverApp(rt);
    await Promise.all([api.ready(), approver.ready()]);
  });
  afterAll(async () => {
    await api?.close();
    await approver?.close();
    await rt?.close();
    await worker?.close();
    await redis?.stop();
    await db?.stop();
  });

  const as = (who: { key: string }) => ({ authorization: `Bearer ${who.key}` });
  const get = (app: FastifyInstance, url: string, who: { key: string } = USER) => app.inject({ method: 'GET', url, headers: as(who) });
  const until = async <T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await probe();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const hot = () => new HotRuns(rt.redis, rt.store);
  const archivedRows = async (id: string) =>
    (await rt.archive!.pool.query('SELECT count(*)::int AS n FROM rein.runs WHERE id = $1', [id])).rows[0].n as number;

  async function finishedRun(input: string): Promise<string> {
    const res = await api.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input } });
    expect(res.statusCode).toBe(202);
    const id = res.json().id as string;
    await until('the run to finish or park', async () => {
      const run = await rt.store.get(id);
      return run && ['succeeded', 'failed', 'pending_approval'].includes(run.status) ? run : null;
    });
    const parked = await rt.store.get(id);
    if (parked?.status === 'pending_approval') {
      await rt.approvals.decide({ tenantId: USER.tenantId, userId: USER.userId, roles: ['user'] }, parked.pendingApprovals[0]!, {
        kind: 'approve',
      });
      await until('the approved run to finish', async () => (await rt.store.get(id))?.status === 'succeeded');
    }
    await until('the run to be archived', () => hot().archivedAt(id));
    return id;
  }

  it('archives a finished run once, however often its job runs, and marks it only after the write', async () => {
    const id = await finishedRun('帮我查一下张三的订单 2024001');
    expect(await archivedRows(id)).toBe(1);
    expect(await rt.redis.zscore(ARCHIVE_BACKLOG_KEY, id)).toBeNull();
    const revision = await rt.archive!.runs.revision(USER.tenantId, id);
    // Duplicated jobs (the hook run again, the reaper re-enqueueing, a retried attempt) and two at once write nothing.
    await wrt.applier.completeFinish((await rt.store.get(id))!);
    const twice = await Promise.all([wrt.archive!.archiving.archive(id), wrt.archive!.archiving.archive(id)]);
    expect(twice).toEqual(['unchanged', 'unchanged']);
    await until('the duplicated job to run', async () => !(await wrt.scheduler.queueOf(id).getJob(`${id}-archive`)));
    expect(await archivedRows(id)).toBe(1);
    expect(await rt.archive!.runs.revision(USER.tenantId, id)).toEqual(revision);
  });

  it('a writer cut off mid-transaction leaves nothing half-written, the run unmarked, and the retry archives it', async () => {
    const lock = await rt.archive!.pool.connect();
    try {
      // Hold the events table: the archive write blocks after its run row, inside its transaction.
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE rein.events IN ACCESS EXCLUSIVE MODE');
      const res = await api.inject({ method: 'POST', url: '/v1/runs', headers: as(USER), payload: { input: 'order 2024001 please' } });
      const id = res.json().id as string;
      await until('the run to finish', async () => (await rt.store.get(id))?.status === 'succeeded');
      const writer = await until('the archive write to block', async () => {
        const { rows } = await lock.query(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'worker' AND wait_event_type = 'Lock'",
        );
        return rows[0]?.pid as number | undefined;
      });
      expect(await hot().archivedAt(id)).toBeNull();
      expect(await rt.redis.zscore(ARCHIVE_BACKLOG_KEY, id)).not.toBeNull();
      // The writer's connection dies mid-write (as with a killed worker): its transaction is rolled back.
      await lock.query('SELECT pg_terminate_backend($1)', [writer]);
      await lock.query('ROLLBACK');
      expect(await hot().archivedAt(id)).toBeNull();
      await until('the retried job to archive it', () => hot().archivedAt(id));
      expect(await archivedRows(id)).toBe(1);
      const trace = await rt.archive!.runs.readTrace(USER.tenantId, id);
      expect(trace?.steps.map((s) => s.toolCalls.length)).toEqual([1, 0]);
    } finally {
      await lock.query('ROLLBACK').catch(() => {});
      lock.release();
    }
  });

  it('reads answer the same JSON before and after hot retention drops the keys, with the same tenant and owner rules', async () => {
    const id = await finishedRun('add a note to order 2024001 of 张三');
    const urls = [`/v1/runs/${id}`, `/v1/runs/${id}/trace`, '/v1/runs?limit=5', `/v1/runs?agent=order-assistant&status=succeeded`];
    const before = await Promise.all(urls.map(async (u) => (await get(api, u)).json()));
    const approvalsBefore = (await get(approver, '/v1/approvals?limit=50', APPROVER)).json();
    const eventsBefore = (await get(api, `/v1/runs/${id}/events`)).body;
    expect(before[1].steps[0].toolCalls[0]).toMatchObject({ name: 'update_order_note', approval: { status: 'approved' } });
    expect(approvalsBefore.approvals.some((a: { runId: string }) => a.runId === id)).toBe(true);

    // Hot retention due at once (the worker's own waits an hour): it drops the keys once the archive confirms the revision.
    const retire = createRunArchiving({
      hot: hot(),
      archive: rt.archive!.runs,
      enqueue: rt.enqueue,
      metrics: rt.metrics,
      logger: rt.logger,
      hotRetentionMs: 0,
      staleMs: 60_000,
    });
    expect(await retire.sweep()).toBeGreaterThanOrEqual(1);
    expect(await rt.redis.exists(...Object.values(runKeys(id)))).toBe(0);

    const after = await Promise.all(urls.map(async (u) => (await get(api, u)).json()));
    expect(after).toEqual(before);
    expect((await get(approver, '/v1/approvals?limit=50', APPROVER)).json()).toEqual(approvalsBefore);
    // Byte for byte: the events' payloads are kept as written (json, not jsonb), ids included (Last-Event-ID resumes the same).
    expect((await get(api, `/v1/runs/${id}/events`)).body).toBe(eventsBefore);
    // Another tenant, and another user of the tenant, get a 404 as for a run that never was; an approver of the tenant sees it.
    for (const u of [`/v1/runs/${id}`, `/v1/runs/${id}/trace`, `/v1/runs/${id}/events`]) {
      expect((await get(api, u, OTHER_TENANT)).statusCode).toBe(404);
      expect((await get(api, u, OTHER_USER)).statusCode).toBe(404);
      expect((await get(api, u, APPROVER)).statusCode).toBe(200);
    }
    expect((await get(api, '/v1/runs?limit=50', OTHER_TENANT)).json().runs).toEqual([]);
  });

  it('searches Chinese and English through the API, combined with filters, paged; never across tenants', async () => {
    const id = await finishedRun('张三 的订单 2024001 到哪了');
    const search = async (q: string, who = USER, extra = '') =>
      (await get(api, `/v1/runs?q=${encodeURIComponent(q)}${extra}`, who)).json() as {
        runs: Array<{ id: string }>;
        nextCursor?: string;
        finishedOnly?: true;
      };
    for (const q of ['张三', '2024001', 'SHIPPED', 'of 张三 has']) expect((await search(q)).runs.map((r) => r.id)).toContain(id);
    // A search reads the archive and says so: runs still active are not in it.
    expect((await search('张三')).finishedOnly).toBe(true);
    expect((await get(api, '/v1/runs?limit=5')).json().finishedOnly).toBeUndefined();
    expect((await search('张三', USER, '&status=failed')).runs).toEqual([]);
    expect((await search('张三', OTHER_TENANT)).runs).toEqual([]);
    // Another user of the tenant searches only their own runs.
    expect((await search('张三', OTHER_USER)).runs).toEqual([]);
    const first = await search('2024001', USER, '&limit=1');
    expect(first.runs).toHaveLength(1);
    const second = await search('2024001', USER, `&limit=1&cursor=${first.nextCursor}`);
    expect(second.runs[0]?.id).not.toBe(first.runs[0]?.id);
    // Not SQL: a quote, a wildcard and a forged cursor are text and a 400.
    expect((await search("' OR 1=1 --")).runs).toEqual([]);
    expect((await search('%')).runs).toEqual([]);
    expect((await get(api, '/v1/runs?q=x&cursor=WyInOyBEUk9QIFRBQkxFIHJlaW4ucnVuczsgLS0iLCJ4Il0')).json().error.code).toBe(
      'invalid_cursor',
    );
    // What PostgreSQL would refuse (a NUL, year 0) is the caller's 400, not the archive's 503.
    for (const bad of ['q=a%00b', 'q=x&agent=a%00', 'from=0000-06-01T00:00:00Z', 'q=x&to=0000-12-31T00:00:00Z']) {
      const res = await get(api, `/v1/runs?${bad}`);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error.code).toBe('invalid_request');
    }
  });

  it('usage sums equal the runs’ own usage, for approvers only, per tenant', async () => {
    const from = '2020-01-01T00:00:00Z';
    const to = '2100-01-01T00:00:00Z';
    const res = await get(api, `/v1/usage?from=${from}&to=${to}&groupBy=agent`, APPROVER);
    expect(res.statusCode).toBe(200);
    const { rows } = await rt.archive!.pool.query(
      `SELECT count(*)::int AS runs, sum(steps)::int AS steps, sum(prompt_tokens)::int AS p, sum(completion_tokens)::int AS c
       FROM rein.runs WHERE tenant_id = 'acme'`,
    );
    const runs = (await get(api, '/v1/runs?limit=50', APPROVER)).json().runs as Array<{
      usage: { promptTokens: number; completionTokens: number };
      step: number;
    }>;
    const [row] = res.json().rows;
    expect(row).toMatchObject({ key: 'order-assistant', runs: rows[0].runs, steps: rows[0].steps });
    expect(row.runs).toBe(runs.length);
    expect(row.promptTokens).toBe(runs.reduce((n, r) => n + r.usage.promptTokens, 0));
    expect(row.completionTokens).toBe(runs.reduce((n, r) => n + r.usage.completionTokens, 0));
    const byModel = (await get(api, `/v1/usage?from=${from}&to=${to}&groupBy=model`, APPROVER)).json().rows;
    expect(byModel.reduce((n: number, r: { promptTokens: number }) => n + r.promptTokens, 0)).toBe(row.promptTokens);
    expect((await get(api, `/v1/usage?from=${from}&to=${to}`, USER)).statusCode).toBe(403);
    expect((await get(api, `/v1/usage?from=${from}&to=${to}&groupBy=agent;DROP`, APPROVER)).statusCode).toBe(400);
    expect((await get(api, `/v1/usage?from=${from}&to=${to}&groupBy=agent`, OTHER_TENANT)).json().rows).toEqual([]);
    expect((await get(api, `/v1/usage?from=0000-01-01T00:00:00Z&to=${to}`, APPROVER)).json().error.code).toBe('invalid_request');
    // No window: the last 30 days up to now, and the answer says the server chose it.
    const recent = await get(api, '/v1/usage?groupBy=agent', APPROVER);
    expect(recent.statusCode).toBe(200);
    const window = recent.json();
    expect(window.defaulted).toEqual(['from', 'to']);
    expect(Date.parse(window.to) - Date.parse(window.from)).toBe(30 * 86_400_000);
    expect(window.rows).toEqual(res.json().rows); // every run here was created within the last 30 days
    const since = (await get(api, `/v1/usage?from=${from}&groupBy=agent`, APPROVER)).json();
    expect(since).toMatchObject({ from, defaulted: ['to'], rows: res.json().rows });
  });
});
