import type { Approval, ChatMessage, RunEvent, RunReason, RunRecord, StepRecord, TerminalStatus } from '@rein/contract';
import { StaleStepError } from '../../shared/errors.js';
import { runEvent } from './run-event.js';

/**
 * Every way a run's record changes, named in one place: each function takes the run as
 * read and returns what to commit (compare-and-set on the run's version). None of them
 * touches Redis; `retryOnStale` is the one loop that re-reads after a lost commit.
 */

/** What a commit writes besides the run document. */
export interface RunChange {
  step?: StepRecord;
  messages?: ChatMessage[];
  approvals?: Approval[];
  events?: RunEvent[];
}

/** Tokens and money a step spent, charged to the run (in its record) and to its tenant. */
export interface Charge {
  model: string;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Whether the price table knows the model (else costUsd is 0 for want of a price). */
  priced: boolean;
}

/** One compare-and-set write of a run: what the store's commit script applies. */
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

type Change = Omit<Commit, 'from'>;

/** queued → running, when the first step starts. */
export function startRun(run: RunRecord, at: string): Change {
  return { to: { ...run, status: 'running', updatedAt: at } };
}

/**
 * A run queued behind its session (`ifBusy`) starts: it gets the session's history as it
 * is now, then its input, and its time limit counts from here. Still `queued`: its first
 * step starts it.
 */
export function admitQueuedRun(run: RunRecord, history: ChatMessage[], now: number): Change {
  const { queuedBehind: _behind, ...admitted } = run;
  return {
    to: {
      ...admitted,
      historyMessages: history.length,
      updatedAt: new Date(now).toISOString(),
      deadlineAt: new Date(now + run.limits.timeoutMs).toISOString(),
    },
    messages: [...history, { role: 'user', content: run.input }],
  };
}

/** The step is done and the run goes on with the next one. Time spent parked does not count against the deadline. */
export function continueRun(run: RunRecord, patch: Partial<RunRecord>, change: RunChange, now: number): Change {
  const parkedFor = run.parkedAt ? now - Date.parse(run.parkedAt) : 0;
  const { parkedAt: _parked, pendingChildren: _children, ...unparked } = run;
  return {
    to: {
      ...unparked,
      ...patch,
      status: 'running',
      step: run.step + 1,
      pendingApprovals: [],
      deadlineAt: new Date(Date.parse(run.deadlineAt) + parkedFor).toISOString(),
      updatedAt: new Date(now).toISOString(),
    },
    ...change,
  };
}

/**
 * A person granted the parked step more budget (a `budget` approval): its limits grow and
 * it runs again at the same step, its time parked not counted against the deadline.
 */
export function raiseBudget(run: RunRecord, limits: RunRecord['limits'], now: number): Change {
  const parkedFor = run.parkedAt ? now - Date.parse(run.parkedAt) : 0;
  const { parkedAt: _parked, ...unparked } = run;
  return {
    to: {
      ...unparked,
      limits,
      status: 'running',
      pendingApprovals: [],
      deadlineAt: new Date(Date.parse(run.deadlineAt) + parkedFor).toISOString(),
      updatedAt: new Date(now).toISOString(),
    },
  };
}

/** The step waits for approvals; it runs again (resumes) once all are decided. */
export function parkRun(run: RunRecord, patch: Partial<RunRecord>, pendingIds: string[], change: RunChange, at: string): Change {
  return {
    to: { ...run, ...patch, status: 'pending_approval', pendingApprovals: pendingIds, parkedAt: run.parkedAt ?? at, updatedAt: at },
    ...change,
  };
}

/** The step waits for the sub-agent runs it started; it runs again (resumes) once every one has ended. */
export function waitRun(run: RunRecord, patch: Partial<RunRecord>, childIds: string[], change: RunChange, at: string): Change {
  return {
    to: { ...run, ...patch, status: 'waiting', pendingChildren: childIds, parkedAt: run.parkedAt ?? at, updatedAt: at },
    ...change,
  };
}

export interface Ending {
  status: TerminalStatus;
  reason: RunReason;
  /** Already PII-masked. */
  finalAnswer?: string;
  /** Who ended it, for a cancellation. */
  by?: string;
}

/** A terminal status with its reason (I9); the run.finished event goes with it. */
export function finishRun(run: RunRecord, ending: Ending, patch: Partial<RunRecord>, change: RunChange, at: string): Change {
  const data: Record<string, unknown> = { status: ending.status, reason: ending.reason };
  if (ending.finalAnswer !== undefined) data.finalAnswer = ending.finalAnswer;
  if (ending.by !== undefined) data.by = ending.by;
  return {
    to: {
      ...run,
      ...patch,
      status: ending.status,
      reason: ending.reason,
      ...(ending.finalAnswer !== undefined ? { finalAnswer: ending.finalAnswer } : {}),
      pendingApprovals: [],
      ...(run.pendingChildren ? { pendingChildren: [] } : {}),
      updatedAt: at,
    },
    ...change,
    events: [...(change.events ?? []), runEvent('run.finished', run.id, run.step, data)],
  };
}

/**
 * A cancel (by a caller, by the tree when an ancestor ended, or by a new run of its session:
 * `interruption`, reason `interrupted`): the run ends `cancelled`
 * and its pending approvals are withdrawn in the same commit.
 */
export function cancelRun(
  run: RunRecord,
  approvals: readonly Approval[],
  by: string,
  at: string,
  interruption?: NonNullable<RunRecord['interruption']>,
): { change: Change; withdrawn: Approval[] } {
  const comment = interruption ? `run interrupted by ${interruption.by}` : 'run cancelled';
  const withdrawn = approvals
    .filter((a) => a.status === 'pending')
    .map((a): Approval => ({ ...a, status: 'withdrawn', decidedBy: by, decidedAt: at, comment }));
  const reason = interruption ? 'interrupted' : 'cancelled';
  return {
    change: finishRun(run, { status: 'cancelled', reason, by }, interruption ? { interruption } : {}, { approvals: withdrawn }, at),
    withdrawn,
  };
}

/**
 * Approvals of a parked step change: decided or expired, or still pending with one approval
 * of several counted or an escalation; the run stays parked until its step resumes.
 */
export function decideApprovals(run: RunRecord, changed: Approval[], at: string): Change {
  const ids = new Set(changed.filter((a) => a.status !== 'pending').map((a) => a.id));
  const escalations = changed.filter((a) => a.status === 'pending' && a.escalatedAt === at);
  return {
    to: { ...run, pendingApprovals: run.pendingApprovals.filter((p) => !ids.has(p)), updatedAt: at },
    approvals: changed,
    events: [
      ...escalations.map((a) => {
        const last = a.escalations?.at(-1);
        return runEvent('approval.escalated', run.id, a.step, { approvalId: a.id, from: last?.from, to: last?.to, expiresAt: a.expiresAt });
      }),
      ...decidedEvents(
        run,
        changed.filter((a) => ids.has(a.id)),
      ),
    ],
  };
}

function decidedEvents(run: RunRecord, changed: Approval[]): RunEvent[] {
  return changed.map((a) =>
    runEvent('approval.decided', run.id, a.step, {
      approvalId: a.id,
      status: a.status,
      decidedBy: a.decidedBy ?? null,
      comment: a.comment ?? null,
      edited: a.editedBy !== undefined,
    }),
  );
}

/** Attempts `retryOnStale` makes before giving up: each lost commit means someone else moved the run on. */
export const STALE_RETRIES = 8;

/**
 * Runs `attempt` (read, decide, commit) again while its commit loses to another writer,
 * at most `attempts` times; then the last StaleStepError propagates. Every re-read sees
 * newer state, so a bounded loop is enough.
 */
export async function retryOnStale<T>(attempt: () => Promise<T>, attempts = STALE_RETRIES): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof StaleStepError) || i >= attempts) throw err;
    }
  }
}

/**
 * The run moves to app version `appVersion` (an upgrade, at a step boundary): the
 * approvals whose tool changed are withdrawn in the same commit and leave its pending list.
 */
export function moveRun(run: RunRecord, appVersion: string, withdrawn: Approval[], at: string): Change {
  const ids = new Set(withdrawn.map((a) => a.id));
  // An approved plan whose approval is withdrawn covers no call any more: each remaining write asks for its own.
  const planWithdrawn = run.plan?.status === 'approved' && run.plan.approvalId !== undefined && ids.has(run.plan.approvalId);
  return {
    to: {
      ...run,
      appVersion,
      pendingApprovals: run.pendingApprovals.filter((p) => !ids.has(p)),
      ...(planWithdrawn && run.plan ? { plan: { ...run.plan, status: 'rejected' as const } } : {}),
      updatedAt: at,
    },
    approvals: withdrawn,
    events: withdrawn.map((a) =>
      runEvent('approval.withdrawn', run.id, a.step, {
        approvalId: a.id,
        toolName: a.toolName,
        reason: 'version_changed',
        from: run.appVersion ?? null,
        to: appVersion,
      }),
    ),
  };
}
