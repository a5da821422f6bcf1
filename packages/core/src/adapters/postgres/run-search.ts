import { boundedInstantSchema, type RunRecord, type RunStatus, runRecordSchema, type UsageGroup, type UsageRow } from '@rein/contract';
import { z } from 'zod';
import { InvalidRequestError } from '../../shared/errors.js';
import type { Queryable } from './archive-pool.js';

export interface RunSearch {
  tenantId: string;
  userId?: string;
  /** Text that the run's input or final answer contains, case-insensitively (any script: `张三`, `2024001`, `refund`). */
  q?: string;
  agent?: string;
  status?: RunStatus;
  /** Created at or after (ISO time). */
  from?: string;
  /** Created before (ISO time). */
  to?: string;
  /** `nextCursor` of the previous page. */
  cursor?: string;
  limit: number;
}

export interface RunSearchPage {
  runs: RunRecord[];
  nextCursor?: string;
}

export { type UsageGroup, type UsageRow, usageGroupSchema } from '@rein/contract';

export interface UsageQuery {
  tenantId: string;
  /** Runs created in [from, to) (ISO times). */
  from: string;
  to: string;
  groupBy: UsageGroup;
}

/** A page boundary: the last run's creation time and id (ties broken by id, as the indexes order them); a forged one PostgreSQL would refuse is refused here. */
const cursorSchema = z.tuple([
  boundedInstantSchema,
  z
    .string()
    .min(1)
    .max(200)
    .refine((id) => !id.includes('\u0000')),
]);

const encodeCursor = (run: RunRecord) => Buffer.from(JSON.stringify([run.createdAt, run.id])).toString('base64url');

function decodeCursor(cursor: string): [string, string] {
  try {
    return cursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    throw new InvalidRequestError('cursor is not one this server gave out', 'invalid_cursor');
  }
}

/** `q` as an ILIKE pattern matching it anywhere, its own `%`, `_` and `\` taken literally. */
const containsPattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The tenant's archived runs matching every filter, newest first, a page at a time.
 * Text search is ILIKE on `search_text` (input and final answer), served by its trigram
 * index: a query of three characters or more is an index lookup in any script; a
 * shorter one (a two-character Chinese name) has no trigram and is checked row by row
 * within the tenant's time range, which the filters and `from`/`to` bound.
 */
export async function searchRuns(pool: Queryable, s: RunSearch): Promise<RunSearchPage> {
  const params: unknown[] = [s.tenantId];
  const where = ['tenant_id = $1'];
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (s.userId) add((p) => `user_id = ${p}`, s.userId);
  if (s.agent) add((p) => `agent = ${p}`, s.agent);
  if (s.status) add((p) => `status = ${p}`, s.status);
  if (s.from) add((p) => `created_at >= ${p}::timestamptz`, s.from);
  if (s.to) add((p) => `created_at < ${p}::timestamptz`, s.to);
  if (s.q) add((p) => `search_text ILIKE ${p}`, containsPattern(s.q));
  if (s.cursor) {
    const [at, id] = decodeCursor(s.cursor);
    params.push(at, id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(s.limit + 1);
  const { rows } = await pool.query<{ doc: unknown }>(
    `SELECT doc FROM rein.runs WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  const runs = rows.slice(0, s.limit).map((r) => runRecordSchema.parse(r.doc));
  const last = runs.at(-1);
  return { runs, ...(rows.length > s.limit && last ? { nextCursor: encodeCursor(last) } : {}) };
}

/** The key each grouping sums by; `day` is the UTC day the run was created; `mode` sets replays apart from live runs. */
const GROUP_KEY: Record<Exclude<UsageGroup, 'model'>, string> = {
  agent: 'agent',
  mode: `coalesce(doc->>'mode', 'live')`,
  user: 'user_id',
  day: `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
};

const TOTALS = `count(*)::float8 AS runs, (count(*) FILTER (WHERE status = 'failed'))::float8 AS failed,
  sum(steps)::float8 AS steps, sum(prompt_tokens)::float8 AS "promptTokens", sum(completion_tokens)::float8 AS "completionTokens",
  sum(cost_usd)::float8 AS "costUsd",
  percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::float8 AS "p50DurationMs",
  percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms)::float8 AS "p95DurationMs"`;

/**
 * Usage of the tenant's runs created in [from, to), grouped by agent, user or day (the
 * runs' own usage and cost), or by model: the steps each model answered, summed per run
 * first, so `runs` counts the runs that used the model and the duration percentiles
 * weigh each such run once.
 */
export async function usage(pool: Queryable, u: UsageQuery): Promise<UsageRow[]> {
  const window = 'r.tenant_id = $1 AND r.created_at >= $2::timestamptz AND r.created_at < $3::timestamptz';
  const sql =
    u.groupBy === 'model'
      ? `WITH per_run AS (
           SELECT s.model AS key, r.status, r.duration_ms, count(*) AS steps, sum(s.prompt_tokens) AS prompt_tokens,
             sum(s.completion_tokens) AS completion_tokens, sum(s.cost_usd) AS cost_usd
           FROM rein.runs r JOIN rein.steps s ON s.run_id = r.id
           WHERE ${window} GROUP BY s.model, r.id)
         SELECT key, ${TOTALS} FROM per_run GROUP BY key ORDER BY key`
      : `SELECT ${GROUP_KEY[u.groupBy]} AS key, ${TOTALS} FROM rein.runs r WHERE ${window} GROUP BY 1 ORDER BY 1`;
  const { rows } = await pool.query<UsageRow>(sql, [u.tenantId, u.from, u.to]);
  return rows;
}
