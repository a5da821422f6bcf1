import {
  type Approval,
  type ApprovalStatus,
  approvalSchema,
  type ChatMessage,
  type Compensation,
  type CompensationStatus,
  compensationSchema,
  type Effect,
  type RunEvent,
  type RunRecord,
  type RunStatus,
  readMessage,
  runEventSchema,
  runRecordSchema,
  SCHEMA_VERSION,
  type StepRecord,
  stepRecordSchema,
  TERMINAL_STATUSES,
  type TreeUsage,
  treeUsageSchema,
} from '@rein/contract';
import type { Page, PageCursor, PageQuery } from '../policy/ports/pages.js';
import type {
  ChildEntry,
  PiggybackRead,
  RunFilter,
  RunRepository,
  StepRead,
  StoredEvent,
  TreeNodeRead,
} from '../policy/ports/run-repository.js';
import type { TurnJournal } from '../policy/ports/turn-journal.js';
import { isParked } from '../policy/run/run-settled.js';
import type { Commit } from '../policy/run/run-transitions.js';
import { NotFoundError, StaleStepError } from '../shared/errors.js';

/**
 * One run's keys, as the Redis store keeps them: documents as JSON (a read never hands out
 * what a later write changes), the version beside the document, `finished` once a terminal
 * commit marked it.
 */
interface RunKeys {
  doc: string;
  version: number;
  finished: boolean;
  waitingOn?: string;
  messages: string[];
  steps: Map<number, string>;
  approvals: Map<string, string>;
}

interface Entry {
  id: string;
  at: number;
}

/** Newest first, ids sharing a time by id, as the Redis indexes page (index-pager.ts). */
export function pageEntries(entries: Entry[], q: PageQuery): Page {
  const sorted = entries
    .filter((e) => (q.after === undefined || e.at > q.after) && (q.before === undefined || e.at < q.before))
    .filter((e) => !q.cursor || e.at < q.cursor.at || (e.at === q.cursor.at && e.id < q.cursor.id))
    .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const kept = sorted.slice(0, q.limit);
  const last = kept.at(-1);
  return { ids: kept.map((e) => e.id), ...(sorted.length > q.limit && last ? { next: { at: last.at, id: last.id } } : {}) };
}

/** The value under `key`, made (and kept) if there is none: a Redis key springs into being on its first write. */
export function held<V>(map: Map<string, V>, key: string, make: () => V): V {
  const value = map.get(key) ?? make();
  map.set(key, value);
  return value;
}

/** Sorted-set semantics: member to score. */
const rank = (index: Map<string, number>): Entry[] => [...index].map(([id, at]) => ({ id, at }));

/** A stream's ids compared as Redis does (`<ms>-<seq>`). */
const streamOrder = (id: string) => id.split('-').map(Number) as [number, number];
const after = (id: string, than: string) => {
  const [a, b] = streamOrder(id);
  const [c, d] = streamOrder(than);
  return a > c || (a === c && b > d);
};

/**
 * The run store in memory, faithful to the Redis one's semantics (RunRepository and
 * TurnJournal: test/store/run-store.int.test.ts runs the same suite on both): compare-and-set
 * by version, indexes written after the commit, a terminal commit that marks the run
 * finished and drops its effect ledger. Keeps no TTLs. Decisions are the decision
 * journal's, not held here: a step's read finds none.
 */
export class MemoryRuns implements RunRepository, TurnJournal {
  private readonly runs = new Map<string, RunKeys>();
  private readonly events = new Map<string, Array<{ id: string; json: string }>>();
  private readonly children_ = new Map<string, Map<string, string>>();
  private readonly trees = new Map<string, Map<string, string>>();
  private readonly compensations = new Map<string, string>();
  /** The indexes afterCommit writes: a run's status as last indexed, per tenant. */
  private readonly statusIndex = new Map<string, RunStatus>();
  private readonly tenantRuns = new Map<string, Map<string, number>>();
  private readonly approvalIndex = new Map<string, { tenantId: string; status: ApprovalStatus; at: number }>();
  private readonly deadlines = new Map<string, number>();
  private readonly active = new Map<string, number>();
  /** Each run's effect ledger (MemoryEffectLedger), dropped by its terminal commit. */
  readonly effects = new Map<string, Map<string, Effect>>();
  /** A session's runs, by creation time (`tenant user session` to run to ms). */
  readonly sessionRuns = new Map<string, Map<string, number>>();
  private seq = 0;
  /** Frees a finished run's session (MemorySessions plugs itself in). */
  releaseSession: (run: RunRecord) => Promise<void> = async () => {};

  /** Whether a step's ledger writes are refused: no such run, or its terminal commit came. */
  ledgerClosed(runId: string): boolean {
    const k = this.runs.get(runId);
    return !k || k.finished;
  }

  async create(run: RunRecord, firstMessage: ChatMessage | null, event: RunEvent, history: ChatMessage[] = []): Promise<boolean> {
    if (this.runs.has(run.id)) return false;
    this.runs.set(run.id, {
      doc: JSON.stringify(runRecordSchema.parse(run)),
      version: 0,
      finished: false,
      messages: [...history, ...(firstMessage ? [firstMessage] : [])].map((m) => JSON.stringify(m)),
      steps: new Map(),
      approvals: new Map(),
    });
    this.append(run.id, runEventSchema.parse(event));
    const at = Date.parse(run.createdAt);
    this.statusIndex.set(run.id, run.status);
    held(this.tenantRuns, run.tenantId, () => new Map()).set(run.id, at);
    if (run.sessionId) held(this.sessionRuns, `${run.tenantId} ${run.userId} ${run.sessionId}`, () => new Map()).set(run.id, at);
    this.deadlines.set(run.id, Date.parse(run.deadlineAt));
    this.active.set(run.id, Date.parse(run.updatedAt));
    return true;
  }

  private append(runId: string, event: RunEvent) {
    held(this.events, runId, () => []).push({ id: `${++this.seq}-0`, json: JSON.stringify(event) });
  }

  async get(runId: string): Promise<RunRecord | null> {
    const k = this.runs.get(runId);
    return k ? runRecordSchema.parse(JSON.parse(k.doc)) : null;
  }

  async require(runId: string): Promise<RunRecord> {
    const run = await this.get(runId);
    if (!run) throw new NotFoundError(`run ${runId}`);
    return run;
  }

  async getMany(ids: string[]): Promise<Array<RunRecord | null>> {
    return Promise.all(ids.map((id) => this.get(id)));
  }

  /** As the Redis store: trusted at this release's schema version, parsed (and refused) at any other. */
  private stepRun(runId: string): RunRecord | null {
    const k = this.runs.get(runId);
    if (!k) return null;
    const run = JSON.parse(k.doc) as RunRecord;
    return run.schemaVersion === SCHEMA_VERSION ? run : runRecordSchema.parse(run);
  }

  /** `reads` are commands of the Redis store: the fake has nothing to answer them with, and answers null. */
  async readStep(runId: string, _step: number, reads: PiggybackRead[] = []): Promise<StepRead> {
    const run = this.stepRun(runId);
    const k = this.runs.get(runId);
    return {
      run,
      waitingOn: k?.waitingOn ?? null,
      approvals: run && isParked(run.status) ? await this.approvals(runId) : [],
      decision: null,
      messages: (k?.messages ?? []).map((m) => JSON.parse(m) as ChatMessage),
      reads: reads.map(() => null),
      children: run?.status === 'waiting' ? await this.getMany(run.pendingChildren ?? []) : [],
      descendants: [...(this.trees.get(runId)?.values() ?? [])].map((t) => treeUsageSchema.parse(JSON.parse(t))),
    };
  }

  async compareAndSet(c: Commit): Promise<RunRecord> {
    const next: RunRecord = { ...c.to, version: c.from.version + 1 };
    const k = this.runs.get(next.id);
    if (!k) throw new NotFoundError(`run ${next.id}`);
    if (k.version !== c.from.version) throw new StaleStepError(`run ${next.id} moved past version ${c.from.version}`);
    k.doc = JSON.stringify(next);
    k.version = next.version;
    if (c.step) k.steps.set(c.step.index, JSON.stringify(c.step));
    k.messages.push(...(c.messages ?? []).map((m) => JSON.stringify(m)));
    for (const a of c.approvals ?? []) k.approvals.set(a.id, JSON.stringify(a));
    for (const e of c.events ?? []) this.append(next.id, e);
    if (TERMINAL_STATUSES.includes(next.status)) {
      k.finished = true;
      this.effects.delete(next.id);
    }
    return next;
  }

  async afterCommit(from: RunRecord, next: RunRecord, approvals: Approval[]): Promise<void> {
    this.writeIndexes(next, approvals, from.status === next.status ? [] : [from.status], from.deadlineAt !== next.deadlineAt);
    if (TERMINAL_STATUSES.includes(next.status) && next.sessionId) await this.releaseSession(next);
  }

  async completeFinish(run: RunRecord): Promise<void> {
    this.writeIndexes(run, [], [this.statusIndex.get(run.id) ?? run.status], false);
    if (run.sessionId) await this.releaseSession(run);
  }

  /** As RunStore's: `left`, the statuses the run is no longer indexed under. */
  private writeIndexes(next: RunRecord, approvals: Approval[], left: RunStatus[], deadlineMoved: boolean) {
    for (const a of approvals) this.approvalIndex.set(a.id, { tenantId: next.tenantId, status: a.status, at: Date.parse(a.createdAt) });
    if (left.length) this.statusIndex.set(next.id, next.status);
    const terminal = TERMINAL_STATUSES.includes(next.status);
    if (terminal || isParked(next.status)) this.deadlines.delete(next.id);
    else if (left.length || deadlineMoved) this.deadlines.set(next.id, Date.parse(next.deadlineAt));
    if (terminal) this.active.delete(next.id);
    else if (left.length && !isParked(next.status) && !left.some(isParked)) this.active.set(next.id, Date.parse(next.updatedAt));
  }

  async list(
    tenantId: string,
    filter: RunFilter,
    page: PageQuery,
    byId: (ids: string[]) => Promise<Array<RunRecord | null>> = (ids) => this.getMany(ids),
  ): Promise<{ runs: RunRecord[]; next?: PageCursor }> {
    const entries = rank(this.tenantRuns.get(tenantId) ?? new Map()).filter((e) => {
      const run = this.stepRun(e.id);
      if (!run) return true; // an index entry outlives its run: the read leaves it out
      return (
        (!filter.status || this.statusIndex.get(e.id) === filter.status) &&
        (!filter.agent || run.agent === filter.agent) &&
        (!filter.userId || run.userId === filter.userId)
      );
    });
    const { ids, next } = pageEntries(entries, page);
    const runs = (await byId(ids)).filter((r): r is RunRecord => r !== null && (!filter.status || r.status === filter.status));
    return { runs, ...(next ? { next } : {}) };
  }

  async overdue(at: number, limit = 100): Promise<string[]> {
    return rank(this.deadlines)
      .filter((e) => e.at <= at)
      .sort((a, b) => a.at - b.at)
      .slice(0, limit)
      .map((e) => e.id);
  }

  async activeRuns(limit = 1000): Promise<Array<{ runId: string; since: number }>> {
    return rank(this.active)
      .sort((a, b) => a.at - b.at)
      .slice(0, limit)
      .map((e) => ({ runId: e.id, since: e.at }));
  }

  async touchActive(run: RunRecord): Promise<void> {
    if (this.active.has(run.id)) this.active.set(run.id, Date.parse(run.updatedAt));
  }

  async forgetActive(runId: string): Promise<void> {
    this.active.delete(runId);
  }

  async forgetDeadline(runId: string): Promise<void> {
    this.deadlines.delete(runId);
  }

  async markWaiting(runId: string, cause: string): Promise<void> {
    const k = this.runs.get(runId);
    if (k) k.waitingOn = cause;
  }

  async clearWaiting(runId: string): Promise<void> {
    const k = this.runs.get(runId);
    if (k) delete k.waitingOn;
  }

  async waitingOn(runId: string): Promise<string | null> {
    return this.runs.get(runId)?.waitingOn ?? null;
  }

  async appendEvent(event: RunEvent, existing = false): Promise<void> {
    if (existing && !this.events.has(event.runId)) return;
    this.append(event.runId, event);
  }

  async readEvents(runId: string, afterId: string): Promise<StoredEvent[]> {
    return (this.events.get(runId) ?? [])
      .filter((e) => after(e.id, afterId))
      .slice(0, 100)
      .map((e) => ({ id: e.id, event: runEventSchema.parse(JSON.parse(e.json)) }));
  }

  async mirrorEvents(ancestors: readonly string[], events: readonly RunEvent[]): Promise<void> {
    for (const a of ancestors) for (const e of events) this.append(a, runEventSchema.parse(e));
  }

  async approvals(runId: string): Promise<Approval[]> {
    return [...(this.runs.get(runId)?.approvals.values() ?? [])]
      .map((a) => approvalSchema.parse(JSON.parse(a)))
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  async pageApprovals(tenantId: string, status: ApprovalStatus | undefined, page: PageQuery): Promise<Page> {
    const entries = [...this.approvalIndex]
      .filter(([, a]) => a.tenantId === tenantId && (!status || a.status === status))
      .map(([id, a]) => ({ id, at: a.at }));
    return pageEntries(entries, page);
  }

  async approvalsById(ids: string[]): Promise<Array<Approval | null>> {
    return ids.map((id) => {
      const raw = this.runs.get(id.split('.')[0] ?? '')?.approvals.get(id);
      return raw ? approvalSchema.parse(JSON.parse(raw)) : null;
    });
  }

  async createChild(child: RunRecord, entry: ChildEntry, event: RunEvent): Promise<boolean> {
    const parent = child.parentRunId as string;
    held(this.children_, parent, () => new Map<string, string>()).set(
      entry.id,
      JSON.stringify({ agent: entry.agent, step: entry.step, toolCallId: entry.toolCallId }),
    );
    return this.create(child, { role: 'user', content: child.input }, event);
  }

  async children(runId: string): Promise<ChildEntry[]> {
    return [...(this.children_.get(runId) ?? [])].map(([id, json]) => ({ id, ...(JSON.parse(json) as Omit<ChildEntry, 'id'>) }));
  }

  async chargeTree(run: RunRecord): Promise<void> {
    const charge = JSON.stringify({ ...run.usage, costUsd: run.costUsd, ...(run.overshot ? { overshot: true } : {}) } satisfies TreeUsage);
    for (const a of run.ancestors ?? []) held(this.trees, a, () => new Map<string, string>()).set(run.id, charge);
  }

  async treeNodes(ids: readonly string[]): Promise<TreeNodeRead[]> {
    return ids.map((id) => ({
      id,
      run: this.stepRun(id),
      descendants: [...(this.trees.get(id)?.values() ?? [])].map((t) => treeUsageSchema.parse(JSON.parse(t))),
    }));
  }

  async compensation(runId: string): Promise<Compensation | null> {
    const raw = this.compensations.get(runId);
    return raw ? compensationSchema.parse(JSON.parse(raw)) : null;
  }

  async saveCompensation(
    c: Compensation,
    runId: string,
    create = false,
    replacing: readonly CompensationStatus[] = ['declined'],
  ): Promise<boolean> {
    const doc = JSON.stringify(compensationSchema.parse(c));
    const held = await this.compensation(runId);
    if (create && held && (!replacing.includes(held.status) || held.round !== c.round - 1)) return false;
    this.compensations.set(runId, doc);
    return true;
  }

  async stepRecord(runId: string, index: number): Promise<StepRecord | null> {
    const raw = this.runs.get(runId)?.steps.get(index);
    return raw ? stepRecordSchema.parse(JSON.parse(raw)) : null;
  }

  async steps(runId: string): Promise<StepRecord[]> {
    return [...(this.runs.get(runId)?.steps.values() ?? [])]
      .map((s) => stepRecordSchema.parse(JSON.parse(s)))
      .sort((a, b) => a.index - b.index);
  }

  async messages(runId: string): Promise<ChatMessage[]> {
    return (this.runs.get(runId)?.messages ?? []).map(readMessage);
  }

  async recordAfterFinish(runId: string, step: StepRecord): Promise<boolean> {
    const k = this.runs.get(runId);
    if (!k?.finished || k.steps.has(step.index)) return false;
    k.steps.set(step.index, JSON.stringify(stepRecordSchema.parse(step)));
    this.append(
      runId,
      runEventSchema.parse({
        type: 'step.finished',
        runId,
        step: step.index,
        at: step.finishedAt,
        data: { afterFinish: true, toolCalls: step.toolCalls.length },
      }),
    );
    return true;
  }
}
