import { listApprovalsQuerySchema, listRunsQuerySchema, type Principal } from '@rein/contract';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { ModelGateway, ModelRequest } from '../packages/core/src/adapters/model/model-gateway.js';
import type { Queryable } from '../packages/core/src/adapters/postgres/archive-pool.js';
import { type ArchivePool, createArchivePool } from '../packages/core/src/adapters/postgres/archive-pool.js';
import { migrateArchive } from '../packages/core/src/adapters/postgres/migrations.js';
import { RunArchive } from '../packages/core/src/adapters/postgres/run-archive.js';
import { type RunSearch, searchRuns } from '../packages/core/src/adapters/postgres/run-search.js';
import { stepJobSchema } from '../packages/core/src/adapters/queue/job-catalog.js';
import { HotRuns } from '../packages/core/src/adapters/redis/hot-runs.js';
import { createRunArchiving } from '../packages/core/src/features/archive/run-archiving.js';
import { tenantKeys } from '../packages/core/src/shared/keys.js';
import { startTestPostgres, startTestRedis, type TestRedis, toolCall } from '../packages/core/src/testing/index.js';
import { APPROVER, createHarness, type Harness, type HarnessOptions } from '../packages/core/test/harness.js';
import { percentile } from './step-fake.js';

/**
 * Rein at scale, in two cases (reported, never asserted beyond sanity; `npm run bench`, or
 * one case alone with `-t parked` / `-t archive`):
 *
 * 1. **Parked runs.** BENCH_SCALE_PARKED runs (default 100,000) of one tenant, each parked
 *    on an approval the way a busy approval queue fills: the run's first step proposes a
 *    write (`create_ticket`) that needs a person, and the run waits. They are made by the
 *    real step engine (the core harness, in process, a zero-latency model, many runs in
 *    flight at once). Reported: Redis `used_memory` and keys per parked run, which keys it
 *    is, and the approvals list's latency at that size (the service `GET /v1/approvals`
 *    calls, as an approver: the first page and a deep page, p50/p99 over repeated reads).
 * 2. **The archive at BENCH_SCALE_ARCHIVED rows** (default 1,000,000) on a fresh database
 *    of the PostgreSQL at 127.0.0.1:5432, dropped afterwards. Write throughput is one
 *    worker's archiving code (`RunArchiving.archive`, WORKER_CONCURRENCY's default of 8
 *    jobs at once, the archive pool's default of 5 connections) over runs the engine
 *    finished, on the empty archive and again once it holds the million. The million are
 *    generated in SQL (`generate_series`, in chunks; two thirds Chinese, one third Latin
 *    text, a few rare words planted at known rows), their documents a real archived run's
 *    with the generated fields in. Search latency is `GET /v1/runs?q=`'s service call
 *    (run service → `RunArchive.search`), p50/p99 per query; each query's SQL, captured
 *    as the API sends it, is shown with `EXPLAIN (ANALYZE, BUFFERS)`.
 *
 * BENCH_SCALE_ARCHIVE_WRITES (runs archived per throughput phase, default 1,000) and
 * BENCH_SCALE_READS (reads per latency figure, default 100; a slow query stops after
 * BENCH_SCALE_READ_BUDGET_MS, default 20 s) tune it.
 */
const PARKED = Number(process.env.BENCH_SCALE_PARKED ?? 100_000);
const ARCHIVED = Number(process.env.BENCH_SCALE_ARCHIVED ?? 1_000_000);
const WRITES = Number(process.env.BENCH_SCALE_ARCHIVE_WRITES ?? 1_000);
const READS = Number(process.env.BENCH_SCALE_READS ?? 100);
const READ_BUDGET_MS = Number(process.env.BENCH_SCALE_READ_BUDGET_MS ?? 20_000);
/** Steps in flight at once while runs are made (the harness runs them in this process). */
const IN_FLIGHT = 64;
/** Runs submitted per batch before their steps are drained. */
const BATCH = 1_000;

/** Servers a case started that are still up (a case stops its own when it ends; these are left by a failure). */
const servers = new Set<{ stop(): Promise<void> }>();
afterAll(async () => {
  for (const s of [...servers].reverse()) await s.stop();
});
const keep = <T extends { stop(): Promise<void> }>(s: T): T => {
  servers.add(s);
  return s;
};
const stop = async (s: { stop(): Promise<void> }) => {
  servers.delete(s);
  await s.stop();
};

/** A zero-latency model that keeps no requests (createFakeModel keeps every one: 100,000 prompts). */
function model(reply: (request: ModelRequest) => { content?: string; toolCalls?: ReturnType<typeof toolCall>[] }): ModelGateway {
  return {
    async complete(request) {
      return { model: 'fake-model', content: null, toolCalls: [], usage: { promptTokens: 100, completionTokens: 10 }, ...reply(request) };
    },
  };
}

async function inParallel<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}

const STEP_JOBS = new Set(['step', 'resume', 'wake', 'repair']);

/**
 * Submits `count` runs and runs their steps until none is left to run, `IN_FLIGHT` steps at
 * once. Jobs that wait by design (approval expiry and escalation) are dropped from the
 * harness's queue: their runs are parked, which is the point; keeping them would make the
 * harness's own queue quadratic.
 */
async function makeRuns(t: Harness, count: number, input: (i: number) => string, user: (i: number) => Principal): Promise<string[]> {
  const ids: string[] = [];
  for (let from = 0; from < count; from += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - from) }, (_, j) => from + j);
    const made = new Array<string>(batch.length);
    await inParallel(batch, IN_FLIGHT, async (i) => {
      made[i - from] = await t.submit(input(i), user(i), { maxSteps: 10, maxTokens: 1_000_000 });
    });
    ids.push(...made);
    for (;;) {
      const jobs = t.queue.splice(0).filter((q) => STEP_JOBS.has(q.name));
      if (jobs.length === 0) break;
      await inParallel(jobs, IN_FLIGHT, (q) => t.steps.process(stepJobSchema.parse(q.job)));
    }
  }
  return ids;
}

const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '–');

/** Repeats `read` up to READS times (at least 3, then until the time budget is spent). */
async function timed(read: () => Promise<unknown>): Promise<{ p50: number; p99: number; n: number; error?: string }> {
  const took: number[] = [];
  const started = performance.now();
  try {
    await read(); // warm: the first read loads pages and plans
    while (took.length < READS && (took.length < 3 || performance.now() - started < READ_BUDGET_MS)) {
      const at = performance.now();
      await read();
      took.push(performance.now() - at);
    }
  } catch (err) {
    return { p50: Number.NaN, p99: Number.NaN, n: took.length, error: (err as { code?: string }).code ?? (err as Error).message };
  }
  return { p50: percentile(took, 50), p99: percentile(took, 99), n: took.length };
}

const tenantQuotas = {
  default: { maxConcurrentRuns: 100_000, maxParkedRuns: 10_000_000, tokensPerDay: 1_000_000_000_000, costPerDayUsd: 1_000_000 },
  tenants: {},
};
const harnessOptions: HarnessOptions = {
  profile: { context: undefined },
  quotas: tenantQuotas,
  // An approval waits a day: none expires while the bench reads the list.
  approvalTtlMs: 86_400_000,
};
const userOf = (i: number): Principal => ({ tenantId: 'acme', userId: `user-${i % 50}`, roles: ['user'] });

describe('scale benchmark', () => {
  it('reports Redis memory per parked run and the approvals list at that size', async () => {
    const server: TestRedis = keep(await startTestRedis());
    const admin = new Redis(server.url);
    const used = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
    // The realistic first step of a busy approval queue: check nothing, propose a write that needs a person.
    const t = createHarness(
      server.url,
      model((request) => {
        const input = String(request.messages.find((m) => m.role === 'user')?.content);
        const orderNo = /订单 (\d+)/.exec(input)?.[1] ?? '2024001';
        return {
          content: '订单已超时发货，我为您创建一个工单，等待确认。',
          toolCalls: [
            toolCall('c0', 'create_ticket', {
              orderNo,
              type: '超时发货',
              priority: 'high',
              suggestedAction: '补偿 10 元优惠券并催促仓库发货',
            }),
          ],
        };
      }),
      harnessOptions,
    );
    try {
      await makeRuns(t, 1, () => '订单 2024001 超时发货了，请帮我建一个工单', userOf); // the tenant's first run seeds its demo data
      const before = await used();
      const keysBefore = await admin.dbsize();
      const started = performance.now();
      const ids = await makeRuns(t, PARKED, (i) => `订单 ${2_024_000 + i} 超时发货了，请帮我建一个工单，谢谢（第 ${i} 位客户）`, userOf);
      const parkRate = PARKED / ((performance.now() - started) / 1000);
      const after = await used();
      const keysAfter = await admin.dbsize();
      const pending = await admin.zcard(tenantKeys('acme').approvalsByStatus('pending'));
      const sample = await Promise.all(
        ids.filter((_, i) => i % Math.max(1, Math.floor(PARKED / 200)) === 0).map((id) => t.store.require(id)),
      );
      expect(sample.every((r) => r.status === 'pending_approval')).toBe(true);
      expect(pending).toBeGreaterThanOrEqual(PARKED);

      // Keys by kind: one pass over the keyspace; MEMORY USAGE for the sampled runs' keys and every shared key.
      const sampled = new Set(sample.map((r) => r.id));
      const kinds = new Map<string, { keys: number; bytes: number; measured: number }>();
      const shared: Array<{ key: string; bytes: number }> = [];
      let cursor = '0';
      do {
        const [next, batch] = await admin.scan(cursor, 'COUNT', 10_000);
        cursor = next;
        for (const key of batch) {
          const run = /^rein:\{([^}]+)\}:(.+)$/.exec(key);
          if (run) {
            const kind = kinds.get(run[2] as string) ?? { keys: 0, bytes: 0, measured: 0 };
            kind.keys++;
            if (sampled.has(run[1] as string)) {
              kind.bytes += Number(await admin.memory('USAGE', key, 'SAMPLES', 0));
              kind.measured++;
            }
            kinds.set(run[2] as string, kind);
          } else if (shared.length < 5_000) {
            shared.push({ key, bytes: Number(await admin.memory('USAGE', key, 'SAMPLES', 0)) });
          }
        }
      } while (cursor !== '0');
      const sharedBytes = shared.reduce((s, k) => s + k.bytes, 0);

      // The approvals list, as an approver reads it (GET /v1/approvals?status=pending).
      const page = (cursor?: string) =>
        t.approvals.list(APPROVER, listApprovalsQuerySchema.parse({ status: 'pending', ...(cursor ? { cursor } : {}) }));
      const first = await page();
      expect(first.approvals).toHaveLength(100);
      // Walk to the middle of the queue, page by page, as a person paging through it would.
      const depth = Math.max(1, Math.floor(PARKED / 2 / 100));
      const walk: number[] = [];
      let deep: string | undefined = first.nextCursor;
      for (let p = 1; p < depth && deep; p++) {
        const at = performance.now();
        deep = (await page(deep)).nextCursor;
        walk.push(performance.now() - at);
      }
      expect(deep).toBeDefined();
      const firstReads = await timed(() => page());
      const deepReads = await timed(() => page(deep));
      const firstFive = await timed(() => t.approvals.list(APPROVER, listApprovalsQuerySchema.parse({ status: 'pending', limit: 500 })));
      // A requester reads their own: the same index, filtered (1 in 50 here), so a page comes back short.
      const own = await timed(() => t.approvals.list(userOf(7), listApprovalsQuerySchema.parse({ status: 'pending' })));

      console.log(`\nParked-runs benchmark: ${PARKED} runs of one tenant parked on an approval (create_ticket), in process`);
      console.table([
        { measure: 'runs parked per second (submit + first step, in process)', value: parkRate.toFixed(0) },
        { measure: 'Redis used_memory, total after', value: `${(after / 2 ** 20).toFixed(0)} MiB` },
        { measure: 'Redis used_memory per parked run', value: `${((after - before) / PARKED / 1024).toFixed(2)} KiB` },
        { measure: 'keys per parked run (DBSIZE delta ÷ runs)', value: ((keysAfter - keysBefore) / PARKED).toFixed(2) },
        { measure: 'shared (tenant/fleet) keys, MEMORY USAGE', value: `${shared.length} keys, ${(sharedBytes / 2 ** 20).toFixed(1)} MiB` },
        { measure: 'pending approvals in the index', value: pending },
      ]);
      console.log('Per-run keys by kind (count over all runs; MEMORY USAGE averaged over sampled runs, bytes):');
      console.table(
        Object.fromEntries(
          [...kinds].map(([kind, k]) => [kind, { keys: k.keys, 'bytes / key': k.measured ? Math.round(k.bytes / k.measured) : '–' }]),
        ),
      );
      console.log('Largest shared keys (MEMORY USAGE, bytes):');
      console.table(
        shared
          .sort((a, b) => b.bytes - a.bytes)
          .slice(0, 8)
          .map((k) => ({ key: k.key, bytes: k.bytes })),
      );
      console.log(`Approvals list at ${pending} pending (approver, status=pending; ms):`);
      console.table([
        { read: 'first page (limit 100)', p50: ms(firstReads.p50), p99: ms(firstReads.p99), n: firstReads.n },
        { read: `deep page (page ${depth + 1}, cursor)`, p50: ms(deepReads.p50), p99: ms(deepReads.p99), n: deepReads.n },
        { read: `walking pages 2…${depth}`, p50: ms(percentile(walk, 50)), p99: ms(percentile(walk, 99)), n: walk.length },
        { read: 'first page (limit 500)', p50: ms(firstFive.p50), p99: ms(firstFive.p99), n: firstFive.n },
        { read: 'a requester’s own (limit 100, 1 in 50 theirs)', p50: ms(own.p50), p99: ms(own.p99), n: own.n },
      ]);
      expect(after).toBeGreaterThan(before);
    } finally {
      await t.close();
      admin.disconnect();
      await stop(server);
    }
  });

  it('reports archive write throughput and run search at a million archived runs', async () => {
    const db = await startTestPostgres('the scale benchmark');
    if (!db) return;
    keep(db);
    const server: TestRedis = keep(await startTestRedis());
    // As the API and a worker open it: the default pool (5 connections, 15 s statement timeout).
    const pool: ArchivePool = createArchivePool(db.url);
    try {
      await migrateArchive(pool);
      const archive = new RunArchive(pool);
      // Runs of three steps: two policy searches, then an answer (Chinese or Latin).
      const t = createHarness(
        server.url,
        model((request) => {
          const done = request.messages.filter((m) => m.role === 'tool').length;
          const input = String(request.messages.find((m) => m.role === 'user')?.content);
          return done < 2
            ? {
                content: `looking up policy ${done}`,
                toolCalls: [toolCall(`c${done}`, 'search_policy', { query: `退款 政策 第${done}条` })],
              }
            : {
                content: /[a-z]/.test(input.slice(0, 5))
                  ? 'Your refund request was submitted; the money is back within 3 working days.'
                  : '已为您提交退款申请，预计 3 个工作日内原路退回。',
              };
        }),
        { ...harnessOptions, archive },
      );
      try {
        await makeRuns(t, 1, () => 'warm-up', userOf);
        const finished = await makeRuns(
          t,
          2 * WRITES,
          (i) =>
            i % 3 === 0 ? `Order ${3_024_000 + i}: my parcel is late, I want a refund` : `订单 ${3_024_000 + i} 超时发货了，想申请退款`,
          userOf,
        );
        const archiving = createRunArchiving({
          hot: new HotRuns(t.redis, t.store),
          archive,
          enqueue: async () => {},
          metrics: t.metrics,
          logger: t.logger,
          hotRetentionMs: 3_600_000,
          staleMs: 60_000,
        });
        const archiveAll = async (ids: string[]) => {
          const started = performance.now();
          const results: string[] = [];
          await inParallel(ids, 8, async (id) => results.push(await archiving.archive(id)));
          expect(results.every((r) => r === 'written')).toBe(true);
          return ids.length / ((performance.now() - started) / 1000);
        };
        const emptyRate = await archiveAll(finished.slice(0, WRITES));

        // The million, generated in SQL: 9 in 10 rows the tenant's (the rest another's), newest first,
        // one every 30 s back over about a year; two thirds Chinese, one third Latin.
        const template = await pool.query<{ doc: unknown }>('SELECT doc::jsonb AS doc FROM rein.runs LIMIT 1');
        const fillStarted = performance.now();
        const CHUNK = 100_000;
        for (let from = 1; from <= ARCHIVED; from += CHUNK) {
          await pool.query(BULK_SQL, [
            from,
            Math.min(ARCHIVED, from + CHUNK - 1),
            template.rows[0]?.doc,
            CN_NAMES,
            CN_ASKS,
            CN_ANSWERS,
            EN_NAMES,
            EN_ASKS,
            EN_ANSWERS,
          ]);
        }
        const fillSeconds = (performance.now() - fillStarted) / 1000;
        const atScaleRate = await archiveAll(finished.slice(WRITES));
        await pool.query('VACUUM ANALYZE rein.runs');
        const sizes = await pool.query<{ rows: string; heap: string; trgm: string; total: string }>(
          `SELECT (SELECT count(*) FROM rein.runs)::text AS rows, pg_relation_size('rein.runs')::text AS heap,
             pg_relation_size('rein.runs_search')::text AS trgm, pg_total_relation_size('rein.runs')::text AS total`,
        );

        // The queries: common, rare (planted at known rows) and absent words, in each shape.
        const QUERIES: Array<{ q: string; shape: string; who?: Principal }> = [
          { q: 'refund', shape: 'Latin word, common' },
          { q: 'Okonkwo', shape: 'Latin word, rare (10 rows)' },
          { q: 'zyxwvut', shape: 'Latin word, absent' },
          { q: '20240123457', shape: 'order number (1 row)' },
          { q: '退款', shape: '2-char Chinese, common' },
          { q: '龙井', shape: '2-char Chinese, rare (10 rows)' },
          { q: '麒麟', shape: '2-char Chinese, absent' },
          { q: '超时发货', shape: '4-char Chinese, common' },
          { q: '青花瓷茶具', shape: '5-char Chinese, rare (10 rows)' },
          { q: '独角兽乐园', shape: '5-char Chinese, absent' },
          { q: '龙井', shape: '2-char Chinese, rare, a user’s own runs', who: userOf(27) },
        ];
        const rows: object[] = [];
        const plans: string[] = [];
        for (const { q, shape, who } of QUERIES) {
          const principal = who ?? APPROVER;
          const search = () => t.runs.list(principal, listRunsQuerySchema.parse({ q }));
          const page = await search();
          const reads = await timed(search);
          // The SQL the API sends for it, captured, then explained with its parameters.
          let sent: { text: string; values: unknown[] } | undefined;
          const recorder = {
            query: async (text: string, values: unknown[]) => {
              sent = { text, values };
              return { rows: [] };
            },
          } as unknown as Queryable;
          const s: RunSearch = { tenantId: principal.tenantId, q, limit: 50, ...(who ? { userId: who.userId } : {}) };
          await searchRuns(recorder, s);
          const explained = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${sent?.text}`, sent?.values);
          const plan = explained.rows.map((r) => r['QUERY PLAN']).join('\n');
          const scans = [...plan.matchAll(/(Bitmap Index Scan on \w+|Index Scan(?: Backward)? using \w+|Seq Scan on [\w.]+)/g)].map(
            (m) => m[1],
          );
          const hit = /Buffers: shared hit=(\d+)(?: read=(\d+))?/.exec(plan);
          rows.push({
            query: q,
            shape,
            found: `${page.runs.length}${page.nextCursor ? '+' : ''}`,
            'p50 ms': ms(reads.p50),
            'p99 ms': ms(reads.p99),
            n: reads.error ? `${reads.n} (${reads.error})` : reads.n,
            plan: [...new Set(scans)].join(' + '),
            buffers: hit ? `${hit[1]} hit${hit[2] ? ` ${hit[2]} read` : ''}` : '',
          });
          plans.push(`-- ${shape}: q=${q}\n${plan}`);
        }

        const size = sizes.rows[0] as { rows: string; heap: string; trgm: string; total: string };
        const mib = (b: string) => `${(Number(b) / 2 ** 20).toFixed(0)} MiB`;
        console.log(`\nArchive benchmark at scale: ${size.rows} archived runs`);
        console.table([
          { measure: `rows generated in SQL (${ARCHIVED}, chunks of ${CHUNK})`, value: `${fillSeconds.toFixed(0)} s` },
          {
            measure: 'rein.runs heap / trigram index / total with indexes',
            value: `${mib(size.heap)} / ${mib(size.trgm)} / ${mib(size.total)}`,
          },
          {
            measure: `archive writes, one worker (8 jobs, pool of 5), empty archive (runs/s, ${WRITES} runs)`,
            value: emptyRate.toFixed(1),
          },
          { measure: `archive writes, one worker, at ${size.rows} rows (runs/s, ${WRITES} runs)`, value: atScaleRate.toFixed(1) },
        ]);
        console.log('GET /v1/runs?q= (the run service, as an approver unless said; first page, limit 50):');
        console.table(rows);
        console.log('EXPLAIN (ANALYZE, BUFFERS) of each search, as the API sends it:');
        console.log(plans.join('\n\n'));
        expect(Number(size.rows)).toBeGreaterThanOrEqual(ARCHIVED);
      } finally {
        await t.close();
      }
    } finally {
      await pool.end();
      await stop(server);
      await stop(db); // the database is dropped
    }
  });
});

const CN_NAMES = [
  '张伟',
  '王芳',
  '李娜',
  '刘洋',
  '陈静',
  '杨帆',
  '赵磊',
  '黄敏',
  '周杰',
  '吴霞',
  '徐明',
  '孙丽',
  '马超',
  '朱琳',
  '胡斌',
  '郭婷',
];
const CN_ASKS = [
  '超时发货了，想申请退款',
  '收货地址填错了，能帮我改一下吗',
  '收到的商品有破损，要求换货',
  '发票抬头写错了，需要重开',
  '优惠券下单时没有生效',
  '物流三天没有更新了',
  '想取消订单并退款',
  '请催一下仓库尽快发货',
];
const CN_ANSWERS = [
  '已为您提交退款申请，预计 3 个工作日内原路退回。',
  '已更新收货地址，包裹将按新地址配送。',
  '已创建换货工单，请保留商品包装。',
  '已重新开具发票，将发送到您的邮箱。',
  '已补发一张同面额优惠券。',
  '已联系物流公司核实，稍后回复您。',
];
const EN_NAMES = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy', 'Mallory', 'Oscar'];
const EN_ASKS = [
  'my parcel is late, I want a refund',
  'the delivery address is wrong, please change it',
  'the item arrived damaged, I need a replacement',
  'the invoice title is wrong, please reissue it',
  'my coupon did not apply at checkout',
  'tracking has not moved for three days',
  'please cancel the order and refund me',
  'please ask the warehouse to ship it soon',
];
const EN_ANSWERS = [
  'Your refund request was submitted; the money is back within 3 working days.',
  'The delivery address was updated.',
  'A replacement ticket was created; please keep the packaging.',
  'A new invoice was issued and sent to your e-mail.',
  'A coupon of the same value was sent to you.',
  'We asked the carrier and will get back to you shortly.',
];

/**
 * Rows g = $1…$2 of the generated archive. Words are picked by hashing g, so every run of
 * the bench makes the same rows; rows with g % 100000 = 77, 78 and 79 carry the rare words
 * (ten rows each in a million), and the order numbers run 2024 followed by g in 7 digits.
 */
const BULK_SQL = `
WITH gen AS (
  SELECT g,
    CASE WHEN g % 10 = 0 THEN 'globex' ELSE 'acme' END AS tenant,
    'user-' || (g % 50) AS usr,
    md5('scale-' || g)::uuid::text AS id,
    date_trunc('milliseconds', now() - interval '1 hour' - g * interval '30 seconds') AS created,
    '2024' || lpad(g::text, 7, '0') AS order_no,
    g % 3 = 0 AS latin,
    (hashint4(g)::bigint & 2147483647) AS h1,
    (hashint4(g + 7919)::bigint & 2147483647) AS h2,
    (hashint4(g + 104729)::bigint & 2147483647) AS h3
  FROM generate_series($1::int, $2::int) AS g
), txt AS (
  SELECT gen.*,
    CASE WHEN latin
      THEN 'Order ' || order_no || ': ' || ($8::text[])[1 + h1 % cardinality($8::text[])] || ' (' || ($7::text[])[1 + h2 % cardinality($7::text[])] || ')'
      ELSE ($4::text[])[1 + h2 % cardinality($4::text[])] || '：订单 ' || order_no || ' ' || ($5::text[])[1 + h1 % cardinality($5::text[])]
    END || CASE g % 100000 WHEN 77 THEN '，顺便问一下龙井的库存' WHEN 78 THEN '，买的是青花瓷茶具' WHEN 79 THEN ' — from Mr Okonkwo' ELSE '' END AS input,
    CASE WHEN latin THEN ($9::text[])[1 + h3 % cardinality($9::text[])] ELSE ($6::text[])[1 + h3 % cardinality($6::text[])] END AS answer
  FROM gen
)
INSERT INTO rein.runs (id, tenant_id, user_id, agent, status, input, final_answer, steps, prompt_tokens, completion_tokens,
  total_tokens, cost_usd, duration_ms, created_at, finished_at, revision, doc)
SELECT id, tenant, usr, $3::jsonb->>'agent', 'succeeded', input, answer, 3, 300, 30, 330, 0, 5000, created,
  created + interval '5 seconds', ARRAY[1, 0]::bigint[],
  ($3::jsonb || jsonb_build_object('id', id, 'tenantId', tenant, 'userId', usr, 'input', input, 'finalAnswer', answer,
    'createdAt', to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char((created + interval '5 seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))::json
FROM txt`;
