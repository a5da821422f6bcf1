import { NotFoundError, StaleStepError } from '../errors.js';
import { ACTIVE_RUNS_KEY, DEADLINES_KEY, runKeys, tenantKeys } from '../keys.js';
import type { RedisClient } from '../redis.js';
import { type Approval, approvalSchema } from '../schemas/approval.js';
import { type RunEvent, runEventSchema } from '../schemas/event.js';
import { type ChatMessage, chatMessageSchema } from '../schemas/message.js';
import { type RunRecord, type RunStatus, runRecordSchema, type StepRecord, stepRecordSchema, TERMINAL_STATUSES } from '../schemas/run.js';
import { CommitResult, CreateResult, withScripts } from './lua-scripts.js';

export interface Commit {
  /** The run as the caller read it; its version is the compare-and-set token. */
  from: RunRecord;
  /** The new run document (its version is set here). */
  to: Omit<RunRecord, 'version'>;
  step?: StepRecord;
  messages?: ChatMessage[];
  approvals?: Approval[];
  events?: RunEvent[];
}

export interface StoredEvent {
  id: string;
  event: RunEvent;
}

/**
 * The run record and everything hanging off it. All multi-key writes of a run go
 * through one compare-and-set Lua script, so a stale or duplicate worker cannot
 * overwrite newer state.
 */
export class RunStore {
  private readonly redis: ReturnType<typeof withScripts>;

  constructor(
    redis: RedisClient,
    private readonly traceTtlSeconds: number,
  ) {
    this.redis = withScripts(redis);
  }

  /** Creates the run unless one with the same id exists; returns whether it did. */
  async create(run: RunRecord, firstMessage: ChatMessage, event: RunEvent): Promise<boolean> {
    const k = runKeys(run.id);
    const created = await this.redis.createRun(
      k.run,
      k.messages,
      k.events,
      JSON.stringify(runRecordSchema.parse(run)),
      JSON.stringify(firstMessage),
      JSON.stringify(event),
    );
    if (created === CreateResult.Created) {
      // Three keys in three slots: no MULTI on a cluster, and none needed (the reaper heals a missing index entry).
      await Promise.all([
        this.redis.zadd(tenantKeys(run.tenantId).runs, Date.parse(run.createdAt), run.id),
        this.redis.zadd(DEADLINES_KEY, Date.parse(run.deadlineAt), run.id),
        this.redis.zadd(ACTIVE_RUNS_KEY, Date.parse(run.updatedAt), run.id),
      ]);
    }
    return created === CreateResult.Created;
  }

  async get(runId: string): Promise<RunRecord | null> {
    const doc = await this.redis.hget(runKeys(runId).run, 'doc');
    return doc ? runRecordSchema.parse(JSON.parse(doc)) : null;
  }

  async require(runId: string): Promise<RunRecord> {
    const run = await this.get(runId);
    if (!run) throw new NotFoundError(`run ${runId}`);
    return run;
  }

  async messages(runId: string): Promise<ChatMessage[]> {
    const raw = await this.redis.lrange(runKeys(runId).messages, 0, -1);
    return raw.map((m) => chatMessageSchema.parse(JSON.parse(m)));
  }

  async steps(runId: string): Promise<StepRecord[]> {
    const raw = await this.redis.hvals(runKeys(runId).steps);
    return raw.map((s) => stepRecordSchema.parse(JSON.parse(s))).sort((a, b) => a.index - b.index);
  }

  async approvals(runId: string): Promise<Approval[]> {
    const raw = await this.redis.hvals(runKeys(runId).approvals);
    return raw.map((a) => approvalSchema.parse(JSON.parse(a))).sort((a, b) => a.id.localeCompare(b.id));
  }

  /**
   * Commits atomically if the run is still at `from.version`. Throws StaleStepError
   * otherwise; the caller re-reads and decides again.
   */
  async commit(c: Commit): Promise<RunRecord> {
    const next: RunRecord = runRecordSchema.parse({ ...c.to, version: c.from.version + 1 });
    const k = runKeys(next.id);
    const messages = (c.messages ?? []).map((m) => JSON.stringify(m));
    const approvals = (c.approvals ?? []).flatMap((a) => [a.id, JSON.stringify(approvalSchema.parse(a))]);
    const events = (c.events ?? []).map((e) => JSON.stringify(runEventSchema.parse(e)));
    const terminal = TERMINAL_STATUSES.includes(next.status);
    const result = await this.redis.commitRun(
      k.run,
      k.messages,
      k.steps,
      k.approvals,
      k.events,
      k.decisions,
      k.effects,
      String(c.from.version),
      JSON.stringify(next),
      c.step ? String(c.step.index) : '',
      c.step ? JSON.stringify(stepRecordSchema.parse(c.step)) : '',
      String(terminal ? this.traceTtlSeconds : 0),
      String(messages.length),
      String(c.approvals?.length ?? 0),
      String(events.length),
      ...messages,
      ...approvals,
      ...events,
    );
    if (result === CommitResult.NoSuchRun) throw new NotFoundError(`run ${next.id}`);
    if (result === CommitResult.Stale) {
      throw new StaleStepError(`run ${next.id} moved past version ${c.from.version}`);
    }
    await this.afterCommit(c.from, next, c.approvals ?? []);
    return next;
  }

  /**
   * Indexes in other hash slots than the run's, updated right after its commit: the
   * tenant's approvals, the deadline index the sweeper scans (running and queued runs
   * only: a parked run is governed by its approvals' expiry), and the tenant's active
   * runs. A crash in between only delays an index; the sweeper and the reaper heal it.
   * The keys sit in different slots, so the writes are independent (no MULTI, which a
   * cluster refuses across slots); each is idempotent, and a retried commit repeats them.
   */
  private async afterCommit(from: RunRecord, next: RunRecord, approvals: Approval[]): Promise<void> {
    const writes: Array<Promise<unknown>> = [];
    const tenant = tenantKeys(next.tenantId);
    if (approvals.length) writes.push(this.redis.zadd(tenant.approvals, ...approvals.flatMap((a) => [Date.parse(a.createdAt), a.id])));
    const terminal = TERMINAL_STATUSES.includes(next.status);
    if (terminal) writes.push(this.redis.srem(tenant.active, next.id), this.redis.zrem(ACTIVE_RUNS_KEY, next.id));
    else writes.push(this.redis.zadd(ACTIVE_RUNS_KEY, Date.parse(next.updatedAt), next.id));
    if (terminal || next.status === 'pending_approval') writes.push(this.redis.zrem(DEADLINES_KEY, next.id));
    else if (from.status !== next.status || from.deadlineAt !== next.deadlineAt)
      writes.push(this.redis.zadd(DEADLINES_KEY, Date.parse(next.deadlineAt), next.id));
    await Promise.all(writes);
  }

  /** Runs whose deadline passed by `at` (ms), for the sweeper. */
  async overdue(at: number, limit = 100): Promise<string[]> {
    return this.redis.zrangebyscore(DEADLINES_KEY, '-inf', at, 'LIMIT', 0, limit);
  }

  /** Non-terminal runs, oldest change first, with their last change (ms). */
  async activeRuns(limit = 1000): Promise<Array<{ runId: string; since: number }>> {
    const flat = await this.redis.zrange(ACTIVE_RUNS_KEY, 0, limit - 1, 'WITHSCORES');
    const out: Array<{ runId: string; since: number }> = [];
    for (let i = 0; i < flat.length; i += 2) out.push({ runId: flat[i] as string, since: Number(flat[i + 1]) });
    return out;
  }

  /**
   * Why the run's step is being held back (e.g. `model_unavailable`), kept beside the
   * run document rather than in it, so that whoever ends the run at its deadline — the
   * worker or the sweeper — gives the same reason.
   */
  async markWaiting(runId: string, cause: string): Promise<void> {
    await this.redis.hset(runKeys(runId).run, 'waitingOn', cause);
  }

  async clearWaiting(runId: string): Promise<void> {
    await this.redis.hdel(runKeys(runId).run, 'waitingOn');
  }

  async waitingOn(runId: string): Promise<string | null> {
    return this.redis.hget(runKeys(runId).run, 'waitingOn');
  }

  async forgetActive(runId: string): Promise<void> {
    await this.redis.zrem(ACTIVE_RUNS_KEY, runId);
  }

  async forgetDeadline(runId: string): Promise<void> {
    await this.redis.zrem(DEADLINES_KEY, runId);
  }

  /** Live-only events (e.g. "tool called"); the durable ones are written by commit. */
  async appendEvent(event: RunEvent): Promise<void> {
    await this.redis.xadd(runKeys(event.runId).events, '*', 'e', JSON.stringify(event));
  }

  /** Events after `afterId` ('0' = from the start); blocks up to `blockMs` when none. */
  /** Up to 100 events after `afterId`, at once (live readers wait on a StreamHub). */
  async readEvents(runId: string, afterId: string): Promise<StoredEvent[]> {
    const key = runKeys(runId).events;
    const reply = await this.redis.xread('COUNT', 100, 'STREAMS', key, afterId);
    const entries = reply?.[0]?.[1] ?? [];
    return entries.map(([id, fields]) => ({ id, event: runEventSchema.parse(JSON.parse(fields[1] ?? '{}')) }));
  }

  /** The tenant's runs, newest first, optionally filtered by status. */
  async list(tenantId: string, opts: { userId?: string; status?: RunStatus; limit: number }): Promise<RunRecord[]> {
    const ids = await this.redis.zrevrange(tenantKeys(tenantId).runs, 0, 999);
    const out: RunRecord[] = [];
    for (let i = 0; i < ids.length && out.length < opts.limit; i += 100) {
      // Each run in its own slot: separate commands (a cluster pipeline must stay on one node), sent together.
      const docs = await Promise.all(ids.slice(i, i + 100).map((id) => this.redis.hget(runKeys(id).run, 'doc')));
      for (const doc of docs) {
        if (typeof doc !== 'string') continue; // expired trace
        const run = runRecordSchema.parse(JSON.parse(doc));
        if (opts.userId && run.userId !== opts.userId) continue;
        if (opts.status && run.status !== opts.status) continue;
        out.push(run);
        if (out.length === opts.limit) break;
      }
    }
    return out;
  }

  /** Approval ids of a tenant, newest first (status is read from each run). */
  async tenantApprovalIds(tenantId: string, limit: number): Promise<string[]> {
    return this.redis.zrevrange(tenantKeys(tenantId).approvals, 0, limit - 1);
  }

  /** The run an Idempotency-Key (already scoped to its tenant) points to, if any. */
  async idempotentRun(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  /** Claims an Idempotency-Key for `runId`; returns the run id that holds it if someone was first. */
  async claimIdempotencyKey(key: string, runId: string, ttlSeconds: number): Promise<string | null> {
    const set = await this.redis.set(key, runId, 'EX', ttlSeconds, 'NX');
    return set === 'OK' ? null : await this.redis.get(key);
  }
}
