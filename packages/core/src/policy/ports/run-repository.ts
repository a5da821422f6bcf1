// The persistence ports live in policy/: they are type-only declarations over the contract's
// and policy's own values (Commit, IdempotencyEntry), so the adapters below step/ can
// `implements` them and step/ and features/ depend on them without naming Redis; shared/
// would sit below the policy types they need.
import type {
  Approval,
  ApprovalStatus,
  ChatMessage,
  Compensation,
  CompensationStatus,
  Decision,
  RunEvent,
  RunRecord,
  RunStatus,
  TreeUsage,
} from '@rein/contract';
import type { Commit } from '../run/run-transitions.js';
import type { Page, PageCursor, PageQuery } from './pages.js';

/**
 * A read of another key sent in the same round trip as a step's read (a tenant's usage),
 * its reply handed back as it is: a command of the backing store, name first.
 */
export type PiggybackRead = [string, ...Array<string | number>];

/** What a step needs from its run, read in one round trip. */
export interface StepRead {
  run: RunRecord | null;
  /** Why the step is being held back (see markWaiting). */
  waitingOn: string | null;
  /** Only read for a parked run (empty otherwise): no other run has approvals of its current step. */
  approvals: Approval[];
  /** The journaled decision of the step, if the model already answered it. */
  decision: Decision | null;
  /** The run's history, as sent to the model (without the system prompt). */
  messages: ChatMessage[];
  /** The replies to the caller's own reads sent with it. */
  reads: unknown[];
  /** A `waiting` run's pending children (null where gone); empty otherwise. */
  children: Array<RunRecord | null>;
  /** What the run's descendants spent, each its total (empty for a run without any). */
  descendants: TreeUsage[];
}

/** A sub-agent run as its parent's index keeps it. */
export interface ChildEntry {
  id: string;
  agent: string;
  step: number;
  toolCallId: string;
}

/** A run of a tree with what its descendants spent: what bounds the runs below it. */
export interface TreeNodeRead {
  id: string;
  run: RunRecord | null;
  descendants: TreeUsage[];
}

export interface RunFilter {
  status?: RunStatus;
  agent?: string;
  userId?: string;
}

export interface StoredEvent {
  id: string;
  event: RunEvent;
}

/**
 * Run documents, their indexes, approvals, events and tree, written by one compare-and-set
 * per step (`compareAndSet`: a stale or duplicate worker cannot overwrite newer state).
 * Implemented by adapters/redis/run-store.ts and, in memory, by testing/memory-runs.ts.
 */
export interface RunRepository {
  /** Creates the run unless one with the same id exists; returns whether it did. `history` goes before the input. */
  create(run: RunRecord, firstMessage: ChatMessage | null, event: RunEvent, history?: ChatMessage[]): Promise<boolean>;
  get(runId: string): Promise<RunRecord | null>;
  /** The run, or NotFoundError. */
  require(runId: string): Promise<RunRecord>;
  /** Run documents, fetched together; null where the run expired. */
  getMany(ids: string[]): Promise<Array<RunRecord | null>>;
  /** The run, the step's decision, its history (and approvals and children when parked) at once. */
  readStep(runId: string, step: number, reads?: PiggybackRead[]): Promise<StepRead>;
  /** Commits if the run is still at `c.from.version`, returning it at version + 1; StaleStepError otherwise, NotFoundError without a run. */
  compareAndSet(c: Commit): Promise<RunRecord>;
  /** The indexes that follow a commit from `from` to `next` (status, approvals, deadline, active runs, session). */
  afterCommit(from: RunRecord, next: RunRecord, approvals: Approval[]): Promise<void>;
  /** The reaper's repair of a finished run still in the active index: its indexes written again. */
  completeFinish(run: RunRecord): Promise<void>;
  /** The tenant's runs matching every filter, newest first, a page at a time. */
  list(
    tenantId: string,
    filter: RunFilter,
    page: PageQuery,
    byId?: (ids: string[]) => Promise<Array<RunRecord | null>>,
  ): Promise<{ runs: RunRecord[]; next?: PageCursor }>;
  /** Runs whose deadline passed by `at` (ms), for the sweeper. */
  overdue(at: number, limit?: number): Promise<string[]>;
  /** Runs indexed as active, by the time of their last status change, oldest first. */
  activeRuns(limit?: number): Promise<Array<{ runId: string; since: number }>>;
  touchActive(run: RunRecord): Promise<void>;
  forgetActive(runId: string): Promise<void>;
  forgetDeadline(runId: string): Promise<void>;
  /** Why the run's step is held back, kept beside the run document. */
  markWaiting(runId: string, cause: string): Promise<void>;
  clearWaiting(runId: string): Promise<void>;
  waitingOn(runId: string): Promise<string | null>;
  /** A live-only event; `existing`: only to a run's stream that exists. */
  appendEvent(event: RunEvent, existing?: boolean): Promise<void>;
  /** Up to 100 events after `afterId`. */
  readEvents(runId: string, afterId: string): Promise<StoredEvent[]>;
  /** Copies a sub-agent's events into its ancestors' streams. */
  mirrorEvents(ancestors: readonly string[], events: readonly RunEvent[]): Promise<void>;
  approvals(runId: string): Promise<Approval[]>;
  /** The tenant's approval ids, newest first, optionally of one status. */
  pageApprovals(tenantId: string, status: ApprovalStatus | undefined, page: PageQuery): Promise<Page>;
  /** Approvals by id (`<runId>.<step>.<n>`); null where gone. */
  approvalsById(ids: string[]): Promise<Array<Approval | null>>;
  /** Creates a sub-agent's run after its entry in the parent's children index; returns whether it created it. */
  createChild(child: RunRecord, entry: ChildEntry, event: RunEvent): Promise<boolean>;
  children(runId: string): Promise<ChildEntry[]>;
  /** Charges a run's spending to each ancestor's tree, under its own id (a charge sent again changes nothing). */
  chargeTree(run: RunRecord): Promise<void>;
  treeNodes(ids: readonly string[]): Promise<TreeNodeRead[]>;
  compensation(runId: string): Promise<Compensation | null>;
  /** Writes a compensation; `create`: only over none or the round before in a `replacing` status. Returns whether it wrote. */
  saveCompensation(c: Compensation, runId: string, create?: boolean, replacing?: readonly CompensationStatus[]): Promise<boolean>;
}
