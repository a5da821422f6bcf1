import {
  type Approval,
  approvalSchema,
  type Compensation,
  compensationSchema,
  type RunEvent,
  type RunRecord,
  runEventSchema,
  runRecordSchema,
  type StepRecord,
  stepRecordSchema,
  TERMINAL_STATUSES,
  toolCallRecordSchema,
  treeUsageSchema,
} from '@rein/contract';
import pg from 'pg';
import { z } from 'zod';
import type { StoredEvent } from '../../policy/ports/run-repository.js';
import { ReinError } from '../../shared/errors.js';
import { type ArchivePool, guardedQueries, type Queryable } from './archive-pool.js';
import { type RunSearch, type RunSearchPage, searchRuns, type UsageQuery, type UsageRow, usage } from './run-search.js';

/**
 * A finished run and everything hanging off it, as read from Redis: what the archive
 * writes. `events` are the run's stream entries with their ids (`<ms>-<seq>`).
 */
export interface ArchiveDoc {
  run: RunRecord;
  steps: StepRecord[];
  approvals: Approval[];
  compensation: Compensation | null;
  events: StoredEvent[];
  /** Which read of the run this is (store/hot-runs.ts): parts that only grow, compared in order. */
  revision: number[];
  /** The app's version, when the deployment names one. */
  appVersion?: string;
  /** The run's place in its tree as Redis holds it; absent or empty: not a parent. */
  tree?: RunTreeParts;
}

/**
 * A run's `children` and `tree` hashes (store/run-store.ts): the sub-agent runs it
 * started and each descendant's spending. The run view's `children` and `treeUsage` are
 * built from them, from Redis or from the archive alike.
 */
export const runTreePartsSchema = z.object({
  children: z.array(z.object({ id: z.string(), agent: z.string(), step: z.number(), toolCallId: z.string() })),
  descendants: z.array(treeUsageSchema),
});
export type RunTreeParts = z.infer<typeof runTreePartsSchema>;

/** What `RunStore.get`, `.approvals` and `.compensation` answer for a run, read from the archive. */
export interface ArchivedRun {
  run: RunRecord;
  approvals: Approval[];
  compensation: Compensation | null;
  /** Null for a run archived with no tree parts (not a parent, or archived before they were kept). */
  tree: RunTreeParts | null;
}

/**
 * Whether the archive refused this document itself, so that writing it again can never
 * succeed: it fails its schema, or PostgreSQL answered with a data exception (class 22: a
 * value out of range, text its json refuses) or an integrity violation (class 23). Such a
 * document goes to the dead letters instead of holding up the backlog.
 */
export function isUnstorable(err: unknown): boolean {
  return err instanceof z.ZodError || (err instanceof pg.DatabaseError && /^(22|23)/.test(err.code ?? ''));
}

/** What the trace view is built from (`RunStore.steps` and `.approvals`), read from the archive. */
export interface ArchivedTrace {
  run: RunRecord;
  steps: StepRecord[];
  approvals: Approval[];
}

/** How many events one read returns, as `RunStore.readEvents` (XREAD COUNT 100). */
const EVENTS_PER_READ = 100;

/**
 * JSON for a json parameter. PostgreSQL refuses U+0000 in text and json(b), and a lone
 * surrogate in json, so a NUL or an unpaired surrogate that a tool, a model or a user put
 * in a string is archived as U+FFFD rather than the run never archiving. JSON.stringify
 * writes both as `\u` escapes (a paired surrogate stays a character), so every such escape
 * is one of them; the look-behind leaves an escaped backslash followed by "u0000" alone.
 */
export const pgJson = (value: unknown): string =>
  JSON.stringify(value).replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g, '$1\\ufffd');

/** `<ms>-<seq>` (or Redis' `0`) as a pair to compare on. */
function streamId(id: string): [string, string] {
  const [ms = '0', seq = '0'] = id.split('-');
  return [ms, seq];
}

/** The same order RunStore.approvals gives. */
const byId = (a: Approval, b: Approval) => a.id.localeCompare(b.id);

/**
 * The archive of finished runs in PostgreSQL: one idempotent write per run, and reads
 * that answer what the Redis store answers, so the run service builds the same views
 * from either. Every read is scoped to a tenant: another tenant's run reads as absent.
 * Who of the tenant may see it (owner, approvers) stays the run service's rule.
 */
export class RunArchive {
  /** Reads go through this: an unreachable PostgreSQL is a 503, not a 500. */
  private readonly reads: Queryable;

  constructor(private readonly pool: ArchivePool) {
    this.reads = guardedQueries(pool);
  }

  /** The tenant's archived runs matching a search (run-search.ts). */
  search(s: RunSearch): Promise<RunSearchPage> {
    return searchRuns(this.reads, s);
  }

  /** The tenant's usage, grouped (run-search.ts). */
  usage(u: UsageQuery): Promise<UsageRow[]> {
    return usage(this.reads, u);
  }

  /**
   * Writes the run, its steps and tool calls, approvals, compensation and events in one
   * transaction, unless the archive already holds this revision of it or a later one:
   * returns whether it wrote. A retried or duplicated call writes nothing (the run's row
   * is the key; a concurrent twin waits on its lock, then finds the revision there), a
   * later revision (a saga that ran after the finish, a step recorded after it) replaces
   * the run's rows, and a crash mid-write leaves nothing to clean up. A run id another
   * tenant holds is never overwritten.
   */
  async archiveRun(doc: ArchiveDoc): Promise<boolean> {
    const run = runRecordSchema.parse(doc.run);
    if (!TERMINAL_STATUSES.includes(run.status))
      throw new ReinError('archive_run_not_finished', `run ${run.id} is ${run.status}: only finished runs are archived`);
    const steps = doc.steps.map((s) => stepRecordSchema.parse(s));
    const approvals = doc.approvals.map((a) => approvalSchema.parse(a));
    const compensation = doc.compensation ? compensationSchema.parse(doc.compensation) : null;
    const tree = doc.tree && (doc.tree.children.length || doc.tree.descendants.length) ? runTreePartsSchema.parse(doc.tree) : null;
    const durationMs = Date.parse(run.updatedAt) - Date.parse(run.createdAt);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const written = await client.query(
        `INSERT INTO rein.runs (id, tenant_id, user_id, agent, status, reason, session_id, app_version, input, final_answer,
           steps, prompt_tokens, completion_tokens, total_tokens, cost_usd, duration_ms, created_at, finished_at, revision, doc, compensation, tree)
         SELECT d->>'id', d->>'tenantId', d->>'userId', d->>'agent', d->>'status', d->>'reason', d->>'sessionId', $2, d->>'input',
           d->>'finalAnswer', (d->>'step')::int, (d#>>'{usage,promptTokens}')::bigint, (d#>>'{usage,completionTokens}')::bigint,
           (d#>>'{usage,totalTokens}')::bigint, (d->>'costUsd')::float8, $3, (d->>'createdAt')::timestamptz,
           (d->>'updatedAt')::timestamptz, $5::bigint[], d, $4::json, $6::json
         FROM (SELECT $1::json AS d) AS doc
         ON CONFLICT (id) DO UPDATE SET user_id = EXCLUDED.user_id, agent = EXCLUDED.agent, status = EXCLUDED.status,
           reason = EXCLUDED.reason, session_id = EXCLUDED.session_id, app_version = EXCLUDED.app_version, input = EXCLUDED.input,
           final_answer = EXCLUDED.final_answer, steps = EXCLUDED.steps, prompt_tokens = EXCLUDED.prompt_tokens,
           completion_tokens = EXCLUDED.completion_tokens, total_tokens = EXCLUDED.total_tokens, cost_usd = EXCLUDED.cost_usd,
           duration_ms = EXCLUDED.duration_ms, created_at = EXCLUDED.created_at, finished_at = EXCLUDED.finished_at,
           archived_at = now(), revision = EXCLUDED.revision, doc = EXCLUDED.doc, compensation = EXCLUDED.compensation,
           tree = EXCLUDED.tree
         WHERE rein.runs.revision < EXCLUDED.revision AND rein.runs.tenant_id = EXCLUDED.tenant_id
         RETURNING (xmax = 0) AS inserted`,
        [
          pgJson(run),
          doc.appVersion ?? null,
          durationMs,
          compensation ? pgJson(compensation) : null,
          doc.revision,
          tree ? pgJson(tree) : null,
        ],
      );
      const row = written.rows[0] as { inserted: boolean } | undefined;
      if (!row) {
        await client.query('ROLLBACK');
        return false;
      }
      // A later revision: its rows replace the earlier one's (tool calls go with their steps).
      if (!row.inserted) {
        for (const table of ['steps', 'approvals', 'events']) await client.query(`DELETE FROM rein.${table} WHERE run_id = $1`, [run.id]);
      }
      const scope = [run.id, run.tenantId];
      await client.query(
        `INSERT INTO rein.steps (run_id, tenant_id, index, model, prompt_tokens, completion_tokens, cost_usd, duration_ms, finished_at, doc)
         SELECT $1, $2, x.index, x.doc->>'model', (x.doc#>>'{usage,promptTokens}')::bigint, (x.doc#>>'{usage,completionTokens}')::bigint,
           (x.doc->>'costUsd')::float8, (x.doc->>'durationMs')::float8, (x.doc->>'finishedAt')::timestamptz, x.doc
         FROM json_to_recordset($3::json) AS x(index int, doc json)`,
        [...scope, pgJson(steps.map(({ toolCalls: _calls, ...s }) => ({ index: s.index, doc: s })))],
      );
      const calls = steps.flatMap((s) =>
        s.toolCalls.map(({ arguments: args, observation, ...rest }, position) => ({
          step: s.index,
          position,
          // As text, so that an absent argument (SQL NULL) stays apart from a JSON null.
          arguments: args === undefined ? undefined : pgJson(args),
          observation,
          doc: rest,
        })),
      );
      await client.query(
        `INSERT INTO rein.tool_calls (run_id, tenant_id, step, position, name, outcome, approval_id, arguments, observation, doc)
         SELECT $1, $2, x.step, x.position, x.doc->>'name', x.doc->>'outcome', x.doc->>'approvalId', x.arguments::json, x.observation, x.doc
         FROM json_to_recordset($3::json) AS x(step int, position int, arguments text, observation text, doc json)`,
        [...scope, pgJson(calls)],
      );
      await client.query(
        `INSERT INTO rein.approvals (run_id, tenant_id, id, status, tool_name, created_at, decided_at, doc)
         SELECT $1, $2, x.doc->>'id', x.doc->>'status', x.doc->>'toolName', (x.doc->>'createdAt')::timestamptz,
           (x.doc->>'decidedAt')::timestamptz, x.doc
         FROM json_to_recordset($3::json) AS x(doc json)`,
        [...scope, pgJson(approvals.map((a) => ({ doc: a })))],
      );
      await client.query(
        `INSERT INTO rein.events (run_id, tenant_id, ms, seq, type, doc)
         SELECT $1, $2, x.ms, x.seq, x.doc->>'type', x.doc
         FROM json_to_recordset($3::json) AS x(ms bigint, seq bigint, doc json)`,
        [
          ...scope,
          pgJson(
            doc.events.map(({ id, event: { runId: _implied, ...rest } }) => {
              const [ms, seq] = streamId(id);
              return { ms, seq, doc: runEventSchema.omit({ runId: true }).parse(rest) };
            }),
          ),
        ],
      );
      // Stored at last: an earlier revision the archive refused is no longer a dead letter.
      await client.query('DELETE FROM rein.dead_letters WHERE run_id = $1 AND tenant_id = $2', scope);
      await client.query('COMMIT');
      return true;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Keeps a document the archive refused (see isUnstorable) with why: the snapshot as JSON
   * text (which holds any document: JSON.stringify escapes what text cannot hold), so it is
   * stored somewhere before its run leaves the backlog. A later refusal of the run replaces
   * its row; a later write of it deletes the row. Throws when PostgreSQL cannot take even this.
   */
  async deadLetter(doc: ArchiveDoc, err: unknown): Promise<void> {
    const sqlstate = err instanceof pg.DatabaseError ? (err.code ?? null) : null;
    // PostgreSQL's own message may quote the refused text: no NUL in a text column.
    const error = String((err as Error)?.message ?? err)
      .replaceAll('\u0000', '\ufffd')
      .slice(0, 2_000);
    await this.pool.query(
      `INSERT INTO rein.dead_letters (run_id, tenant_id, revision, error, sqlstate, doc) VALUES ($1, $2, $3::bigint[], $4, $5, $6)
       ON CONFLICT (run_id) DO UPDATE SET revision = EXCLUDED.revision, error = EXCLUDED.error, sqlstate = EXCLUDED.sqlstate,
         doc = EXCLUDED.doc, failed_at = now()
       WHERE rein.dead_letters.tenant_id = EXCLUDED.tenant_id`,
      [doc.run.id, doc.run.tenantId, doc.revision, error, sqlstate, JSON.stringify(doc)],
    );
  }

  /** Whether PostgreSQL answers now (the reaper's pass asks before it re-enqueues the backlog). */
  async reachable(): Promise<boolean> {
    return this.pool.query('SELECT 1').then(
      () => true,
      () => false,
    );
  }

  /** Whether the run is archived. */
  async has(tenantId: string, runId: string): Promise<boolean> {
    return (await this.revision(tenantId, runId)) !== null;
  }

  /** The revision the archive holds of the run (hot retention's check before it drops Redis keys), null if none. */
  async revision(tenantId: string, runId: string): Promise<number[] | null> {
    const { rows } = await this.reads.query<{ revision: string[] }>(
      'SELECT revision::text[] AS revision FROM rein.runs WHERE id = $1 AND tenant_id = $2',
      [runId, tenantId],
    );
    return rows[0] ? rows[0].revision.map(Number) : null;
  }

  /** The tenant's archived run documents among `ids` (what a list reads for runs whose Redis keys are gone). */
  async runsById(tenantId: string, ids: string[]): Promise<RunRecord[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.reads.query<{ doc: unknown }>('SELECT doc FROM rein.runs WHERE tenant_id = $1 AND id = ANY($2::text[])', [
      tenantId,
      ids,
    ]);
    return rows.map((r) => runRecordSchema.parse(r.doc));
  }

  /** The tenant's archived approvals among `ids`. */
  async approvalsById(tenantId: string, ids: string[]): Promise<Approval[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.reads.query<{ doc: unknown }>(
      'SELECT doc FROM rein.approvals WHERE tenant_id = $1 AND id = ANY($2::text[])',
      [tenantId, ids],
    );
    return rows.map((r) => approvalSchema.parse(r.doc));
  }

  /** Deletes archived runs created before `before` (with everything of theirs), at most `limit`: the retention sweep. */
  async deleteOlderThan(before: Date, limit: number): Promise<number> {
    const { rowCount } = await this.reads.query(
      'DELETE FROM rein.runs WHERE id IN (SELECT id FROM rein.runs WHERE created_at < $1 ORDER BY created_at LIMIT $2)',
      [before.toISOString(), limit],
    );
    return rowCount ?? 0;
  }

  /** The run document with its approvals and compensation; null if the tenant has no such archived run. */
  async readRun(tenantId: string, runId: string): Promise<ArchivedRun | null> {
    const [runs, approvals] = await Promise.all([
      this.reads.query<{ doc: unknown; compensation: unknown; tree: unknown }>(
        'SELECT doc, compensation, tree FROM rein.runs WHERE id = $1 AND tenant_id = $2',
        [runId, tenantId],
      ),
      this.approvals(tenantId, runId),
    ]);
    const row = runs.rows[0];
    if (!row) return null;
    return {
      run: runRecordSchema.parse(row.doc),
      approvals,
      compensation: row.compensation ? compensationSchema.parse(row.compensation) : null,
      tree: row.tree ? runTreePartsSchema.parse(row.tree) : null,
    };
  }

  /** The run with its steps (tool calls in order) and approvals; null if the tenant has no such archived run. */
  async readTrace(tenantId: string, runId: string): Promise<ArchivedTrace | null> {
    const scope = [runId, tenantId];
    const [runs, steps, calls, approvals] = await Promise.all([
      this.reads.query<{ doc: unknown }>('SELECT doc FROM rein.runs WHERE id = $1 AND tenant_id = $2', scope),
      this.reads.query<{ doc: Record<string, unknown> }>(
        'SELECT doc FROM rein.steps WHERE run_id = $1 AND tenant_id = $2 ORDER BY index',
        scope,
      ),
      this.reads.query<{ step: number; arguments: string | null; observation: string; doc: Record<string, unknown> }>(
        `SELECT step, arguments::text AS arguments, observation, doc FROM rein.tool_calls
         WHERE run_id = $1 AND tenant_id = $2 ORDER BY step, position`,
        scope,
      ),
      this.approvals(tenantId, runId),
    ]);
    const row = runs.rows[0];
    if (!row) return null;
    const callsOf = new Map<number, unknown[]>();
    for (const c of calls.rows) {
      const call = toolCallRecordSchema.parse({
        ...c.doc,
        ...(c.arguments === null ? {} : { arguments: JSON.parse(c.arguments) }),
        observation: c.observation,
      });
      callsOf.set(c.step, [...(callsOf.get(c.step) ?? []), call]);
    }
    return {
      run: runRecordSchema.parse(row.doc),
      steps: steps.rows.map((s) => stepRecordSchema.parse({ ...s.doc, toolCalls: callsOf.get(s.doc.index as number) ?? [] })),
      approvals,
    };
  }

  /**
   * Up to 100 of the run's events after `afterId` (a stream entry id, or `0` for the
   * start), with their stream ids: what `RunStore.readEvents` answers, so an SSE reader
   * resumes with the same Last-Event-ID on either side.
   */
  async readEvents(tenantId: string, runId: string, afterId: string): Promise<StoredEvent[]> {
    const [ms, seq] = streamId(afterId);
    const { rows } = await this.reads.query<{ id: string; doc: Omit<RunEvent, 'runId'> }>(
      `SELECT ms || '-' || seq AS id, doc FROM rein.events
       WHERE run_id = $1 AND tenant_id = $2 AND (ms, seq) > ($3::bigint, $4::bigint)
       ORDER BY ms, seq LIMIT ${EVENTS_PER_READ}`,
      [runId, tenantId, ms, seq],
    );
    return rows.map((r) => ({ id: r.id, event: runEventSchema.parse({ ...r.doc, runId }) }));
  }

  private async approvals(tenantId: string, runId: string): Promise<Approval[]> {
    const { rows } = await this.reads.query<{ doc: unknown }>('SELECT doc FROM rein.approvals WHERE run_id = $1 AND tenant_id = $2', [
      runId,
      tenantId,
    ]);
    return rows.map((r) => approvalSchema.parse(r.doc)).sort(byId);
  }
}
