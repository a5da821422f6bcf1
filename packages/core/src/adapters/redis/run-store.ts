import {
  type Approval,
  type ApprovalStatus,
  approvalSchema,
  approvalStatusSchema,
  type ChatMessage,
  type Compensation,
  type CompensationStatus,
  compensationSchema,
  decisionSchema,
  type RunEvent,
  type RunRecord,
  type RunStatus,
  readMessage,
  runEventSchema,
  runRecordSchema,
  runStatusSchema,
  SCHEMA_VERSION,
  type StepRecord,
  stepRecordSchema,
  TERMINAL_STATUSES,
  type TreeUsage,
  treeUsageSchema,
} from '@rein/contract';
import type { Page, PageCursor, PageQuery } from '../../policy/ports/pages.js';
import type {
  ChildEntry,
  PiggybackRead,
  RunFilter,
  RunRepository,
  StepRead,
  StoredEvent,
  TreeNodeRead,
} from '../../policy/ports/run-repository.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { isParked } from '../../policy/run/run-settled.js';
import type { Commit } from '../../policy/run/run-transitions.js';
import { NotFoundError } from '../../shared/errors.js';
import { ACTIVE_RUNS_KEY, DEADLINES_KEY, fairShareKeys, runKeys, tenantKeys, versionRunsKey } from '../../shared/keys.js';
import type { Metrics } from '../../shared/metrics.js';
import { pageIndexes } from './index-pager.js';
import { CreateResult, type ScriptGateway, scriptGateway } from './lua-scripts.js';
import { type RedisClient, type RedisCommand, sendCommands } from './redis.js';
import { runFootprint } from './run-footprint.js';
import { refuseOn } from './script-refusals.js';
import { RedisSessions } from './session-store.js';
import { versionRunEntry } from './version-directory.js';

const readTreeUsage = (json: string): TreeUsage => treeUsageSchema.parse(JSON.parse(json));

/**
 * A run document as a step reads it: written by `create` (parsed) or by a commit of
 * Rein's own typed value, so a step trusts it once its schema version is this release's;
 * checking every field again cost three times the JSON parse, on every step. Any other
 * version is parsed, and refused as the schema says. Reads for callers (`get`) parse.
 */
function stepRun(doc: string): RunRecord {
  const run = JSON.parse(doc) as RunRecord;
  return run.schemaVersion === SCHEMA_VERSION ? run : runRecordSchema.parse(run);
}

/** An event as its run's stream keeps it: without the run id, which the stream's key already says. */
const storedEvent = ({ runId: _implied, ...rest }: RunEvent) => JSON.stringify(rest);

/** The write that appends a live-only event to its run's stream, for a caller to send with others in the run's slot. */
export const eventCommand = (event: RunEvent): RedisCommand => ['xadd', runKeys(event.runId).events, '*', 'e', storedEvent(event)];

/**
 * The run record and everything hanging off it, in Redis. All multi-key writes of a run
 * go through one compare-and-set Lua script, so a stale or duplicate worker cannot
 * overwrite newer state; that script writes the turn journal too, which is why one class
 * implements both ports. Sessions and Idempotency-Keys are modules of their own.
 */
export class RunStore implements RunRepository, TurnJournal {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;
  /** Only to free a finished run's session (writeIndexes). */
  private readonly sessions: RedisSessions;

  constructor(
    redis: RedisClient,
    private readonly traceTtlSeconds: number,
    private readonly metrics?: Pick<Metrics, 'storedBytes'>,
  ) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
    this.sessions = new RedisSessions(redis, traceTtlSeconds, this);
  }

  /**
   * Creates the run unless one with the same id exists; returns whether it did.
   * `history` (a session's earlier turns) goes before the input in the conversation.
   */
  async create(run: RunRecord, firstMessage: ChatMessage | null, event: RunEvent, history: ChatMessage[] = []): Promise<boolean> {
    const k = runKeys(run.id);
    const created = await this.scripts.createRun(k, {
      run: JSON.stringify(runRecordSchema.parse(run)),
      event: storedEvent(event),
      messages: [...history, ...(firstMessage ? [firstMessage] : [])].map((m) => JSON.stringify(m)),
    });
    if (created === CreateResult.Created) {
      const t = tenantKeys(run.tenantId);
      const at = Date.parse(run.createdAt);
      const commands: RedisCommand[] = [];
      // Index entries outlive their expired runs by at most one TTL: each insert trims what is older.
      for (const index of [t.runs, t.runsByStatus(run.status), t.runsByAgent(run.agent), t.runsByUser(run.userId)]) {
        commands.push(['zadd', index, at, run.id], ['zremrangebyscore', index, '-inf', `(${at - this.traceTtlSeconds * 1000}`]);
      }
      if (run.sessionId) {
        const session = t.sessionRuns(run.userId, run.sessionId);
        commands.push(['zadd', session, at, run.id], ['expire', session, this.traceTtlSeconds]);
      }
      commands.push(
        ['zadd', DEADLINES_KEY, Date.parse(run.deadlineAt), run.id],
        ['zadd', ACTIVE_RUNS_KEY, Date.parse(run.updatedAt), run.id],
      );
      if (run.appVersion) commands.push(['hset', versionRunsKey(run.appVersion), run.id, versionRunEntry(run.status, 0, run.tenantId)]);
      // Keys in three slots (tenant, deadlines, active runs): no MULTI, which a cluster refuses, and none needed (the reaper heals a missing entry).
      await sendCommands(this.redis, commands);
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

  /**
   * The run, the step's journaled decision and the history in one round trip (one hash
   * slot); the approvals too when the run is parked — only then can its step have any.
   * Messages are validated when committed: re-parsing the whole history with zod on
   * every step made steps cost more as runs grew. `reads`: reads of other slots sent
   * in the same round trip (the tenant's usage), their replies returned as they are.
   */
  async readStep(runId: string, step: number, reads: PiggybackRead[] = []): Promise<StepRead> {
    const k = runKeys(runId);
    const [runFields, decision, messages, tree, ...others] = (await sendCommands(this.redis, [
      ['hmget', k.run, 'doc', 'waitingOn'],
      ['hget', k.decisions, String(step)],
      ['lrange', k.messages, 0, -1],
      ['hvals', k.tree],
      ...reads,
    ])) as [[string | null, string | null], string | null, string[], string[], ...unknown[]];
    const [doc, waitingOn] = runFields;
    const run = doc ? stepRun(doc) : null;
    // A waiting run's step may have approvals too (decided ones, which the step must see again).
    const parked = run?.status === 'pending_approval' || run?.status === 'waiting';
    const [approvals, children] = await Promise.all([
      parked ? this.approvals(runId) : [],
      run?.status === 'waiting' ? this.getMany(run.pendingChildren ?? []) : [],
    ]);
    return {
      run,
      waitingOn,
      approvals,
      decision: decision ? decisionSchema.parse(JSON.parse(decision)) : null,
      messages: messages.map((m) => JSON.parse(m) as ChatMessage),
      reads: others,
      children,
      descendants: tree.map(readTreeUsage),
    };
  }

  /**
   * Creates a sub-agent's run: first its entry in the parent's children index (so that a
   * cancel of the parent finds it even if the parent never commits the step that started
   * it), then the run itself unless it exists. Returns whether it created the run.
   */
  async createChild(child: RunRecord, entry: ChildEntry, event: RunEvent): Promise<boolean> {
    const parent = runKeys(child.parentRunId as string).children;
    await sendCommands(this.redis, [
      ['hset', parent, entry.id, JSON.stringify({ agent: entry.agent, step: entry.step, toolCallId: entry.toolCallId })],
      ['expire', parent, this.traceTtlSeconds],
    ]);
    return this.create(child, { role: 'user', content: child.input }, event);
  }

  /** The sub-agent runs a run started, in no particular order. */
  async children(runId: string): Promise<ChildEntry[]> {
    const raw = await this.redis.hgetall(runKeys(runId).children);
    return Object.entries(raw).map(([id, json]) => ({ id, ...(JSON.parse(json) as Omit<ChildEntry, 'id'>) }));
  }

  /**
   * Charges a run's spending to every ancestor's tree: its totals under its own id, so a
   * charge sent again (a retried or stale commit) changes nothing. Other slots than the
   * run's: sent beside its commit, like the tenant's charge.
   */
  async chargeTree(run: RunRecord): Promise<void> {
    const charge = JSON.stringify({ ...run.usage, costUsd: run.costUsd, ...(run.overshot ? { overshot: true } : {}) } satisfies TreeUsage);
    const commands: RedisCommand[] = (run.ancestors ?? []).flatMap((a): RedisCommand[] => [
      ['hset', runKeys(a).tree, run.id, charge],
      ['expire', runKeys(a).tree, this.traceTtlSeconds],
    ]);
    if (commands.length) await sendCommands(this.redis, commands);
  }

  /** Runs of a tree (a run's ancestors), each with what its descendants spent, in one round trip. */
  async treeNodes(ids: readonly string[]): Promise<TreeNodeRead[]> {
    if (ids.length === 0) return [];
    const replies = (await sendCommands(
      this.redis,
      ids.flatMap((id): RedisCommand[] => [
        ['hget', runKeys(id).run, 'doc'],
        ['hvals', runKeys(id).tree],
      ]),
    )) as Array<string | null | string[]>;
    return ids.map((id, i) => {
      const doc = replies[2 * i] as string | null;
      return {
        id,
        run: doc ? stepRun(doc) : null,
        descendants: ((replies[2 * i + 1] as string[] | null) ?? []).map(readTreeUsage),
      };
    });
  }

  /**
   * Copies a sub-agent run's committed events into its ancestors' streams (with the
   * child's run id), so a reader of the parent's stream sees the tree's progress.
   * Best effort after the commit: a crash in between loses only these copies.
   */
  async mirrorEvents(ancestors: readonly string[], events: readonly RunEvent[]): Promise<void> {
    const commands: RedisCommand[] = ancestors.flatMap((a) =>
      events.map((e): RedisCommand => ['xadd', runKeys(a).events, '*', 'e', JSON.stringify(runEventSchema.parse(e))]),
    );
    if (commands.length) await sendCommands(this.redis, commands);
  }

  /** One committed step record (a read tool's earlier result is answered from it). */
  async stepRecord(runId: string, index: number): Promise<StepRecord | null> {
    const raw = await this.redis.hget(runKeys(runId).steps, String(index));
    return raw ? stepRecordSchema.parse(JSON.parse(raw)) : null;
  }

  async messages(runId: string): Promise<ChatMessage[]> {
    const raw = await this.redis.lrange(runKeys(runId).messages, 0, -1);
    return raw.map(readMessage);
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
   * Commits atomically if the run is still at `from.version` (one round trip): the run's
   * writes, none of its indexes (see afterCommit). Throws StaleStepError otherwise; the
   * caller re-reads and decides again. Only the applier (engine/apply-transition.ts) calls it.
   */
  async compareAndSet(c: Commit): Promise<RunRecord> {
    // A commit is Rein's own typed value, built by the applier: it is not parsed again on
    // the way out (over half of a step's zod time); what comes back in is, on every read.
    const next: RunRecord = { ...c.to, version: c.from.version + 1 };
    const k = runKeys(next.id);
    const messages = (c.messages ?? []).map((m) => JSON.stringify(m));
    const approvals = (c.approvals ?? []).flatMap((a) => [a.id, JSON.stringify(a)]);
    const events = (c.events ?? []).map(storedEvent);
    const terminal = TERMINAL_STATUSES.includes(next.status);
    const result = await this.scripts.commitRun(k, {
      fromVersion: c.from.version,
      run: JSON.stringify(next),
      step: c.step ? { index: c.step.index, json: JSON.stringify(c.step) } : undefined,
      ttlSeconds: terminal ? this.traceTtlSeconds : 0,
      messages,
      approvals,
      events,
    });
    refuseOn.commitRun(result, { runId: next.id, fromVersion: c.from.version });
    return next;
  }

  /**
   * What follows a commit from `from` to `next` in the store: the indexes. A finished run
   * leaves the active index the reaper repairs from last, so a crash before then leaves
   * it there and the reaper does the finish's follow-ups again (see completeFinish). The
   * applier lands a terminal run's charge and runs its finish hooks before calling this,
   * for the same reason.
   */
  async afterCommit(from: RunRecord, next: RunRecord, approvals: Approval[]): Promise<void> {
    const finishing = TERMINAL_STATUSES.includes(next.status) && !TERMINAL_STATUSES.includes(from.status);
    await this.writeIndexes(next, {
      left: from.status === next.status ? [] : [from.status],
      approvals,
      deadlineMoved: from.status !== next.status || from.deadlineAt !== next.deadlineAt,
      finishing,
      ...(from.appVersion !== next.appVersion || from.pendingApprovals.length !== next.pendingApprovals.length
        ? { versionFrom: from.appVersion ?? '' }
        : {}),
    });
  }

  /**
   * Records a step whose calls ran (or may have) while the run was being finished — its
   * worker's commit was stale, the terminal commit came first — so that its effects are in
   * the trace and its saga (the applier runs the finish hooks again to see them). Nothing
   * happens if the run is live (another attempt committed the step) or the step has a
   * record. Returns whether it recorded.
   */
  async recordAfterFinish(runId: string, step: StepRecord): Promise<boolean> {
    const k = runKeys(runId);
    const event: RunEvent = {
      type: 'step.finished',
      runId,
      step: step.index,
      at: step.finishedAt,
      data: { afterFinish: true, toolCalls: step.toolCalls.length },
    };
    const recorded = await this.scripts.recordAfterFinish(k, {
      stepIndex: step.index,
      step: JSON.stringify(stepRecordSchema.parse(step)),
      event: storedEvent(runEventSchema.parse(event)),
    });
    return recorded === 1;
  }

  /**
   * The reaper's repair of a finished run still in the active index: the process that
   * finished it died between the commit and the indexes. Writes the indexes again (after
   * the applier ran the finish hooks again: TransitionApplier.completeFinish), dropping the
   * run from every live status index it may still be in. Its stored bytes are not counted again.
   */
  async completeFinish(run: RunRecord): Promise<void> {
    await this.writeIndexes(run, {
      left: runStatusSchema.options.filter((s) => !TERMINAL_STATUSES.includes(s)),
      approvals: [],
      deadlineMoved: false,
      finishing: false,
    });
  }

  /**
   * Indexes in other hash slots than the run's, updated right after its commit: the
   * tenant's approvals, the deadline index the sweeper scans (running and queued runs
   * only: a parked run is governed by its approvals' expiry), and the tenant's active
   * runs. A crash in between only delays an index; the sweeper and the reaper heal it —
   * which is also why these are independent writes, not a transaction: the keys sit in
   * several slots (a cluster refuses a MULTI across them), each write is idempotent, and
   * a retried commit repeats them. A finished run leaves the active-runs index last.
   * `left`: the status indexes the run is no longer in.
   */
  private async writeIndexes(
    next: RunRecord,
    how: {
      left: RunStatus[];
      approvals: Approval[];
      deadlineMoved: boolean;
      finishing: boolean;
      /** Set when the version index must be written though the status did not change: the version it was under (or ''). */
      versionFrom?: string;
    },
  ): Promise<void> {
    const t = tenantKeys(next.tenantId);
    const commands: RedisCommand[] = [];
    const { approvals } = how;
    if (approvals.length) commands.push(['zadd', t.approvals, ...approvals.flatMap((a) => [Date.parse(a.createdAt), a.id])]);
    for (const a of approvals) {
      for (const s of approvalStatusSchema.options) if (s !== a.status) commands.push(['zrem', t.approvalsByStatus(s), a.id]);
      commands.push(['zadd', t.approvalsByStatus(a.status), Date.parse(a.createdAt), a.id]);
    }
    for (const status of how.left) commands.push(['zrem', t.runsByStatus(status), next.id]);
    if (how.left.length) commands.push(['zadd', t.runsByStatus(next.status), Date.parse(next.createdAt), next.id]);
    const terminal = TERMINAL_STATUSES.includes(next.status);
    if (terminal && next.sessionId) await this.sessions.releaseSession(next);
    // Quotas count running and parked runs apart: a run moves between the tenant's two sets as it parks and resumes.
    // A sub-agent's run is in neither: a tree is admitted once, at its root, and its children take no slot of their own.
    // A fleet-wide fair-share slot is given back by a run parked for a person (it waits for them, not
    // for a turn), not by one waiting for its children: they work under its slot, taking none of their own.
    const admitted = next.parentRunId === undefined;
    if (terminal) commands.push(['srem', t.active, next.id], ['srem', t.parked, next.id], ['srem', fairShareKeys.slots, next.id]);
    else if (isParked(next.status)) {
      if (admitted) commands.push(['srem', t.active, next.id], ['sadd', t.parked, next.id]);
      if (admitted && next.status === 'pending_approval') commands.push(['srem', fairShareKeys.slots, next.id]);
    } else if (how.left.some(isParked)) {
      if (admitted) commands.push(['srem', t.parked, next.id], ['sadd', t.active, next.id]);
    }
    // Scored by its last status change, not touched on every step (the reaper re-scores it).
    else if (how.left.length) commands.push(['zadd', ACTIVE_RUNS_KEY, Date.parse(next.updatedAt), next.id]);
    // The version's unfinished runs, by status (GET /v1/versions, upgrades, the waiting metric).
    if (next.appVersion && (how.left.length || how.versionFrom !== undefined)) {
      if (terminal) commands.push(['hdel', versionRunsKey(next.appVersion), next.id]);
      else
        commands.push([
          'hset',
          versionRunsKey(next.appVersion),
          next.id,
          versionRunEntry(next.status, next.pendingApprovals.length, next.tenantId),
        ]);
    }
    if (how.versionFrom && how.versionFrom !== next.appVersion) commands.push(['hdel', versionRunsKey(how.versionFrom), next.id]);
    if (terminal || isParked(next.status)) commands.push(['zrem', DEADLINES_KEY, next.id]);
    else if (how.deadlineMoved) commands.push(['zadd', DEADLINES_KEY, Date.parse(next.deadlineAt), next.id]);
    await sendCommands(this.redis, commands);
    if (!terminal) return;
    await this.redis.zrem(ACTIVE_RUNS_KEY, next.id);
    if (how.finishing) await this.settle(next);
  }

  /**
   * Once a run is finished (its terminal commit dropped the effect ledger), what it keeps
   * is counted once towards its tenant's stored bytes; not worth failing a finish over.
   */
  private async settle(run: RunRecord): Promise<void> {
    if (!this.metrics) return;
    const bytes = await runFootprint(this.redis, run.id).catch(() => 0);
    this.metrics.storedBytes.inc({ tenant: run.tenantId }, bytes);
  }

  /** The run's saga compensation, if it has one. */
  async compensation(runId: string): Promise<Compensation | null> {
    const raw = await this.redis.get(runKeys(runId).compensation);
    return raw ? compensationSchema.parse(JSON.parse(raw)) : null;
  }

  /**
   * Writes the compensation, kept as long as the run's trace. `create`: only if the run
   * has none yet or only the round before it, in a status of `replacing` (whoever writes
   * first wins: two starts of one round write one); returns whether it wrote.
   */
  async saveCompensation(
    c: Compensation,
    runId: string,
    create = false,
    replacing: readonly CompensationStatus[] = ['declined'],
  ): Promise<boolean> {
    const key = runKeys(runId).compensation;
    const doc = JSON.stringify(compensationSchema.parse(c));
    if (!create) return (await this.redis.set(key, doc, 'EX', this.traceTtlSeconds)) === 'OK';
    const raw = await this.redis.get(key);
    const held = raw ? compensationSchema.parse(JSON.parse(raw)) : null;
    if (held && (!replacing.includes(held.status) || held.round !== c.round - 1)) return false;
    if (!raw) return (await this.redis.set(key, doc, 'EX', this.traceTtlSeconds, 'NX')) === 'OK';
    // Replacing one: only if it is still the one read.
    const replaced = await this.scripts.replaceIfSame({ key }, { held: raw, next: doc, ttlSeconds: this.traceTtlSeconds });
    return replaced === 1;
  }

  /** Runs whose deadline passed by `at` (ms), for the sweeper. */
  async overdue(at: number, limit = 100): Promise<string[]> {
    return this.redis.zrangebyscore(DEADLINES_KEY, '-inf', at, 'LIMIT', 0, limit);
  }

  /**
   * Runs indexed as active (finished ones whose follow-ups a crash cut short included),
   * by the score of their last status change, oldest first.
   */
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

  /** Re-scores a live run in the active-runs index by its last change (for the reaper). */
  async touchActive(run: RunRecord): Promise<void> {
    await this.redis.zadd(ACTIVE_RUNS_KEY, 'XX', Date.parse(run.updatedAt), run.id);
  }

  async forgetActive(runId: string): Promise<void> {
    await this.redis.zrem(ACTIVE_RUNS_KEY, runId);
  }

  async forgetDeadline(runId: string): Promise<void> {
    await this.redis.zrem(DEADLINES_KEY, runId);
  }

  /**
   * Live-only events (e.g. "tool called"); the durable ones are written by commit.
   * `existing`: only to a stream that exists, for an event sent before the run is read (a
   * run that is gone does not get its stream back, without a TTL).
   */
  async appendEvent(event: RunEvent, existing = false): Promise<void> {
    const [, key, ...args] = eventCommand(event);
    await this.redis.call('xadd', key as string, ...(existing ? ['NOMKSTREAM', ...args] : args));
  }

  /** Up to 100 events after `afterId`, at once (live readers wait on a StreamHub). */
  async readEvents(runId: string, afterId: string): Promise<StoredEvent[]> {
    const key = runKeys(runId).events;
    const reply = await this.redis.xread('COUNT', 100, 'STREAMS', key, afterId);
    const entries = reply?.[0]?.[1] ?? [];
    // An event of the run's own has no run id (the key says it); a descendant's copy keeps its own.
    return entries.map(([id, fields]) => ({ id, event: runEventSchema.parse({ runId, ...JSON.parse(fields[1] ?? '{}') }) }));
  }

  /**
   * The tenant's runs matching every filter, newest first, a page at a time, read
   * from the per-filter indexes. A run whose status changed a moment ago may still sit
   * in its old status index: its document decides, so it is left out rather than mislabelled.
   * `byId`: where the documents are read (with the archive on, also where Redis has none).
   */
  async list(
    tenantId: string,
    filter: RunFilter,
    page: PageQuery,
    byId: (ids: string[]) => Promise<Array<RunRecord | null>> = (ids) => this.getMany(ids),
  ): Promise<{ runs: RunRecord[]; next?: PageCursor }> {
    const t = tenantKeys(tenantId);
    const keys = [
      ...(filter.status ? [t.runsByStatus(filter.status)] : []),
      ...(filter.agent ? [t.runsByAgent(filter.agent)] : []),
      ...(filter.userId ? [t.runsByUser(filter.userId)] : []),
    ];
    const { ids, next } = await pageIndexes(this.redis, keys.length ? keys : [t.runs], page);
    const runs = (await byId(ids)).filter((r): r is RunRecord => r !== null && (!filter.status || r.status === filter.status));
    return { runs, ...(next ? { next } : {}) };
  }

  /** Run documents, fetched together; null where the run expired. */
  async getMany(ids: string[]): Promise<Array<RunRecord | null>> {
    if (ids.length === 0) return [];
    const docs = await sendCommands(
      this.redis,
      ids.map((id) => ['hget', runKeys(id).run, 'doc']),
    );
    return docs.map((doc) => (typeof doc === 'string' ? runRecordSchema.parse(JSON.parse(doc)) : null));
  }

  /** The tenant's approval ids, newest first, optionally of one status, a page at a time. */
  async pageApprovals(tenantId: string, status: ApprovalStatus | undefined, page: PageQuery): Promise<Page> {
    const t = tenantKeys(tenantId);
    return pageIndexes(this.redis, [status ? t.approvalsByStatus(status) : t.approvals], page);
  }

  /** Approvals by id (`<runId>.<step>.<n>`), fetched together; null where gone. */
  async approvalsById(ids: string[]): Promise<Array<Approval | null>> {
    if (ids.length === 0) return [];
    const docs = await sendCommands(
      this.redis,
      ids.map((id) => ['hget', runKeys(id.split('.')[0] ?? '').approvals, id]),
    );
    return docs.map((doc) => (typeof doc === 'string' ? approvalSchema.parse(JSON.parse(doc)) : null));
  }
}
