import type { Approval } from '@rein/contract';
import { type RunRecord, type StepRecord, TERMINAL_STATUSES } from '@rein/contract';
import { type CancelExpiry, type ExpireJob, type JobName, type JobPayload, jobRoute } from '../adapters/queue/job-catalog.js';
import { type ApprovalEvent, type ApprovalFeed, approvalEvent } from '../adapters/redis/approval-feed.js';
import type { AuditLog } from '../adapters/redis/audit-log.js';
import type { TenantQuotas } from '../adapters/redis/tenant-quotas.js';
import { escalationDueAt } from '../policy/approvals/escalation.js';
import type { EnqueueOptions } from '../policy/ports/job-queue.js';
import type { RunRepository } from '../policy/ports/run-repository.js';
import type { TurnJournal } from '../policy/ports/turn-journal.js';
import { commitAudit } from '../policy/run/commit-audit.js';
import type { Commit } from '../policy/run/run-transitions.js';
import {
  type ApprovalLoadSettings,
  type CommitFacts,
  changeFacts,
  commitFacts,
  finishFact,
  metSla,
  type RecordFacts,
  recordFacts,
} from '../policy/step/commit-facts.js';
import type { Transition } from '../policy/step/step-policy.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';

/** A job a commit enqueues once it landed. */
export type FollowUpJob = { [N in JobName]: { name: N; payload: JobPayload<N> } }[JobName];

/** What follows a commit, once it landed (the feed events are staged before it). */
export interface FollowUps {
  /** Approval events: staged before the commit (the outbox the reaper redelivers), published after it. */
  feed?: ApprovalEvent[];
  jobs?: FollowUpJob[];
  /** Pending approvals whose expiry (and escalation) timers start (one delayed job per distinct instant). */
  expiry?: Approval[];
  /** Expiry timers that have nothing left to expire. */
  cancelExpiry?: ExpireJob[];
}

type Change = Omit<Commit, 'from'>;

/**
 * What a writer hands the applier: a step's Transition, or one of the other ways a run
 * changes — its first step starts it, an approver decides (or a timer expires) approvals,
 * a caller cancels it, its saga asks for a plan's approval, a run queued behind its
 * session is admitted (its history and input written, its first step enqueued), it moves
 * to another app version, a person grants its parked step more budget.
 */
export type Outcome =
  | { kind: 'step'; transition: Transition; log: Logger }
  | { kind: 'start'; change: Change }
  | { kind: 'decide' | 'cancel' | 'compensate' | 'admit' | 'upgrade' | 'raise'; change: Change; followUps: FollowUps };

/** The hooks of a run's end; each may run more than once (the reaper runs them again), so each is idempotent. */
export interface FinishHooks {
  /** The run just finished (webhooks, compensation). */
  finished(run: RunRecord): Promise<void>;
  /** A commit changed a live run's status or approvals without finishing it (A2A push notifications). */
  changed?(run: RunRecord): Promise<void>;
  /** An approval of a finished run (its compensation plan) was decided. */
  decided?(run: RunRecord): Promise<void>;
}

export interface ApplierDeps {
  store: RunRepository & TurnJournal;
  quotas: TenantQuotas;
  feed: ApprovalFeed;
  /** An Enqueue, seen as taking any job: a follow-up's name and payload were checked together when it was built. */
  enqueue: (name: JobName, job: JobPayload<JobName>, opts?: EnqueueOptions) => Promise<void>;
  cancelExpiry?: CancelExpiry;
  metrics: Metrics;
  now?: () => number;
  /** Whether a tool name is registered (an unknown one is counted as `unknown`). */
  knownTool: (name: string) => boolean;
  /** What approval decisions are measured against (REIN_APPROVAL_SLA_MS) and how deciders are labelled. */
  approvalLoad: ApprovalLoadSettings;
  hooks?: FinishHooks;
  /** The tenants' decision logs: what each commit decided is appended after it landed. */
  audit?: Pick<AuditLog, 'append'>;
}

const STEP_OUTCOME = { continue: 'continued', park: 'parked', wait: 'waiting', finish: 'finished' } as const;

const changeOf = (o: Outcome): Change => (o.kind === 'step' ? o.transition.change : o.change);

/** A step's follow-ups (pure): the next step, or the parked step's approvals announced and timed. */
function stepFollowUps(t: Transition): FollowUps {
  const to = t.change.to;
  if (t.kind === 'continue') return { jobs: [{ name: 'step', payload: { runId: to.id, step: to.step, tenantId: to.tenantId } }] };
  if (t.kind === 'park') return { feed: t.newApprovals.map((a) => approvalEvent(a, false)), expiry: t.newApprovals };
  return {};
}

/**
 * The one place a run's record changes (only it calls RunStore.compareAndSet), in one
 * order: compare-and-set, with a step's tenant charge sent beside it → a finished run's
 * charge lands → the finish hooks of a run that just finished → the indexes (the
 * active-runs index last, so the reaper repairs a crash in between) → the counters →
 * log → follow-ups (feed events, jobs, expiry timers) → the change hooks of a live run whose
 * status or approvals changed (A2A push notifications). The charge lands before the next
 * step is enqueued, so that step's quota check sees it; the indexes are written before
 * it, so a next step's own indexes are never overwritten by older ones. Counters are read
 * from the committed records, after the commit: an attempt that loses the compare-and-set
 * counts nothing.
 */
export function createTransitionApplier(deps: ApplierDeps) {
  const now = deps.now ?? Date.now;

  /** After a commit (ours or someone else's), make sure the job that advances the run exists. */
  async function ensureNext(run: RunRecord, approvals?: Approval[]): Promise<void> {
    if (run.status === 'queued' || run.status === 'running') {
      await deps.enqueue('step', { runId: run.id, step: run.step, tenantId: run.tenantId }, { route: jobRoute(run) });
    } else if (run.status === 'pending_approval') {
      const ofStep = (approvals ?? (await deps.store.approvals(run.id))).filter((a) => a.step === run.step);
      const pending = ofStep.filter((a) => a.status === 'pending');
      if (ofStep.length > 0 && pending.length === 0) {
        await deps.enqueue('resume', { runId: run.id, step: run.step }, { route: jobRoute(run) });
      }
      await scheduleExpiry(pending);
    } else if (run.status === 'waiting') {
      // Every child of the step ended (or is gone): the step resumes.
      const children = await deps.store.getMany(run.pendingChildren ?? []);
      if (children.every((c) => c === null || TERMINAL_STATUSES.includes(c.status))) {
        await deps.enqueue('resume', { runId: run.id, step: run.step }, { route: jobRoute(run) });
      }
    }
  }

  /** One delayed job per distinct expiry (and escalation) instant: both are enforced even if nobody ever looks. */
  async function scheduleExpiry(pending: Approval[]): Promise<void> {
    for (const at of new Set(pending.map((a) => Date.parse(a.expiresAt)))) {
      const first = pending.find((a) => Date.parse(a.expiresAt) === at);
      if (first) await deps.enqueue('expire', { runId: first.runId, step: first.step, at }, { delayMs: at - now() });
    }
    for (const a of pending) {
      const at = escalationDueAt(a);
      if (at !== undefined) await deps.enqueue('escalate', { runId: a.runId, step: a.step, at }, { delayMs: at - now() });
    }
  }

  /** Commits the outcome's change if the run is still `from`; throws StaleStepError (nothing done) otherwise. */
  async function apply(from: RunRecord, o: Outcome): Promise<RunRecord> {
    const change = changeOf(o);
    const followUps = o.kind === 'step' ? stepFollowUps(o.transition) : o.kind === 'start' ? {} : o.followUps;
    await deps.feed.stage(from.tenantId, followUps.feed ?? []);
    // A step's charge goes out beside the commit (one round trip for both). It charges what
    // the run has spent by this step, which is paid whether or not this commit wins: a stale
    // commit lost to another attempt acting on the same journaled decision (I3), or to a
    // cancel, after the model was paid. Charges are idempotent per run total. A finish
    // charges too: it makes up a charge an earlier step lost in a crash.
    const t = o.kind === 'step' ? o.transition : undefined;
    const charging = t && (t.charge || t.kind === 'finish');
    const charged = charging ? deps.quotas.charge(t.change.to) : undefined;
    charged?.catch(() => undefined); // awaited below, once the commit has landed
    // A sub-agent's spending is charged to its ancestors' trees the same way (totals: idempotent).
    const treeCharged = charging && t.change.to.ancestors?.length ? deps.store.chargeTree(t.change.to as RunRecord) : undefined;
    treeCharged?.catch(() => undefined);
    const next = await deps.store.compareAndSet({ from, ...change });
    // A finished run's charge lands before its finish hooks and its indexes: a crash before
    // it leaves the run in the active-runs index, where the reaper charges it.
    const finished = finishFact(from, next);
    if (TERMINAL_STATUSES.includes(next.status)) await charged;
    // A hook that commits (a saga's plan approval) applies an outcome on the finished run: no finish, no hooks again.
    if (finished) await deps.hooks?.finished(next);
    await Promise.all([charged, treeCharged, deps.store.afterCommit(from, next, change.approvals ?? [])]);
    // A sub-agent's committed events also reach its ancestors' streams (a reader of the root sees the tree).
    // Best effort: the copies are a convenience of the stream, the child's own stream and trace keep everything.
    if (next.ancestors?.length && change.events?.length)
      await deps.store.mirrorEvents(next.ancestors, change.events).catch(() => undefined);
    count(o.kind === 'step' ? commitFacts(o.transition, deps.knownTool) : changeFacts(o.kind, change.approvals ?? [], now()));
    if (finished) {
      deps.metrics.runsFinished.inc({ ...finished });
      if (finished.status === 'failed' && finished.reason !== 'input_rejected') deps.metrics.budgetStops.inc({ reason: finished.reason });
    }
    if (o.kind === 'step') countStep(from, o.transition, o.log);
    const created = o.kind === 'step' && o.transition.kind === 'park' ? o.transition.newApprovals : [];
    await deps.audit?.append(commitAudit(o.kind, from, change, created));
    for (const e of followUps.feed ?? []) await deps.feed.publish(from.tenantId, e);
    // A follow-up job is the committed run's: it goes to the workers of the version the run is on.
    for (const j of followUps.jobs ?? []) await deps.enqueue(j.name, j.payload, { route: jobRoute(next) });
    await scheduleExpiry(followUps.expiry ?? []);
    for (const e of followUps.cancelExpiry ?? []) await deps.cancelExpiry?.(e);
    if (o.kind === 'decide' && TERMINAL_STATUSES.includes(from.status)) await deps.hooks?.decided?.(next);
    // Last, so that the next job is not kept waiting; a step that only continues changes neither, and calls nothing here.
    if (!TERMINAL_STATUSES.includes(next.status) && (next.status !== from.status || change.approvals?.length))
      await deps.hooks?.changed?.(next);
    return next;
  }

  /** A step's own counters (model tokens and cost, steps) and its log line. */
  function countStep(from: RunRecord, t: Transition, log: Logger): void {
    const m = deps.metrics;
    const c = t.charge;
    if (c) {
      // A replay's spending is counted apart: what live traffic costs stays readable on its own.
      const [tokens, cost] = from.mode === 'replay' ? [m.replayTokens, m.replayCost] : [m.modelTokens, m.modelCost];
      tokens.inc({ model: c.model, type: 'prompt', tenant: from.tenantId }, c.promptTokens);
      tokens.inc({ model: c.model, type: 'completion', tenant: from.tenantId }, c.completionTokens);
      if (!c.priced) m.modelPriceMissing.inc({ model: c.model });
      m.modelTokenUsage.observe({ model: c.model, type: 'prompt' }, c.promptTokens);
      m.modelTokenUsage.observe({ model: c.model, type: 'completion' }, c.completionTokens);
      cost.inc({ model: c.model, tenant: from.tenantId }, c.costUsd);
    }
    if (t.change.step) m.steps.inc({ outcome: STEP_OUTCOME[t.kind] });
    if (t.log) log[t.log.level](t.log.fields ?? {}, t.log.msg);
  }

  function count(facts: RecordFacts & Partial<CommitFacts>): void {
    const m = deps.metrics;
    for (const f of facts.toolCalls) m.toolCalls.inc(f);
    for (const tool of facts.effectsUncertain) m.effectsUncertain.inc({ tool });
    for (const f of facts.approvalsCreated ?? []) m.approvalsCreated.inc(f);
    for (const f of facts.approvalsDecided ?? []) {
      m.approvalsDecided.inc({ tool: f.tool, decision: f.decision });
      m.approvalWait.observe({ tool: f.tool, risk: f.risk, decision: f.decision }, f.waitedMs / 1000);
      m.approvalSla.inc({ tool: f.tool, risk: f.risk, met: String(metSla(f, deps.approvalLoad.slaMs)) });
      if (f.decidedBy) m.approvalDecisionsBy.inc({ tenant: f.tenantId, decider: deps.approvalLoad.decider(f.tenantId, f.decidedBy) });
    }
  }

  /**
   * Records a step whose calls ran while the run was being finished (its commit lost to the
   * terminal one: see RunStore.recordAfterFinish), counts its calls, and runs the finish
   * hooks again so that the saga sees them. Returns whether it recorded.
   */
  async function recordAfterFinish(runId: string, step: StepRecord): Promise<boolean> {
    if (!(await deps.store.recordAfterFinish(runId, step))) return false;
    count(recordFacts(step, deps.knownTool));
    const run = await deps.store.get(runId);
    if (run) await deps.hooks?.finished(run);
    return true;
  }

  /**
   * The reaper's repair of a finished run still in the active-runs index (the process that
   * finished it died before its follow-ups): the charge, the finish hooks, the indexes
   * again — each idempotent. Nothing is counted again.
   */
  async function completeFinish(run: RunRecord): Promise<void> {
    await deps.quotas.charge(run);
    await deps.hooks?.finished(run);
    await deps.store.completeFinish(run);
  }

  return { apply, ensureNext, recordAfterFinish, completeFinish };
}

export type TransitionApplier = ReturnType<typeof createTransitionApplier>;
