import type { TenantQuotas } from '../budgets/tenant-quotas.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Enqueue } from '../queue/job-catalog.js';
import type { Approval } from '../schemas/approval.js';
import { type RunRecord, type StepRecord, TERMINAL_STATUSES } from '../schemas/run.js';
import { type ApprovalFeed, approvalEvent } from '../store/approval-feed.js';
import type { RunStore } from '../store/run-store.js';
import { commitFacts, type RecordFacts, recordFacts } from './commit-facts.js';
import type { Transition } from './step-policy.js';

export interface ApplierDeps {
  store: RunStore;
  quotas: TenantQuotas;
  feed: ApprovalFeed;
  enqueue: Enqueue;
  metrics: Metrics;
  now: () => number;
  /** Whether a tool name is registered (an unknown one is counted as `unknown`). */
  knownTool: (name: string) => boolean;
}

const STEP_OUTCOME = { continue: 'continued', park: 'parked', finish: 'finished' } as const;

/**
 * The one place a step's Transition takes effect: compare-and-set with the tenant's charge
 * sent beside it, the store's follow-ups (finish hook, indexes), metrics, log, and what
 * comes next. The charge lands before the next step is enqueued, so that step's quota
 * check sees it. Counters are read from the committed records, after the commit: an
 * attempt that loses the compare-and-set counts nothing.
 */
export function createTransitionApplier(deps: ApplierDeps) {
  /** After a commit (ours or someone else's), make sure the job that advances the run exists. */
  async function ensureNext(run: RunRecord, approvals?: Approval[]): Promise<void> {
    if (run.status === 'queued' || run.status === 'running') {
      await deps.enqueue('step', { runId: run.id, step: run.step, tenantId: run.tenantId });
    } else if (run.status === 'pending_approval') {
      const ofStep = (approvals ?? (await deps.store.approvals(run.id))).filter((a) => a.step === run.step);
      const pending = ofStep.filter((a) => a.status === 'pending');
      if (ofStep.length > 0 && pending.length === 0) {
        await deps.enqueue('resume', { runId: run.id, step: run.step });
      }
      await scheduleExpiry(pending);
    }
  }

  /** One delayed job per distinct expiry instant: expiry is enforced even if nobody ever looks. */
  async function scheduleExpiry(pending: Approval[]): Promise<void> {
    for (const at of new Set(pending.map((a) => Date.parse(a.expiresAt)))) {
      const first = pending.find((a) => Date.parse(a.expiresAt) === at);
      if (first) await deps.enqueue('expire', { runId: first.runId, step: first.step, at }, { delayMs: at - deps.now() });
    }
  }

  async function apply(from: RunRecord, t: Transition, log: Logger): Promise<RunRecord> {
    const c = t.charge;
    const requested = t.kind === 'park' ? t.newApprovals.map((a) => approvalEvent(a, false)) : [];
    await deps.feed.stage(from.tenantId, requested);
    // The charge goes out beside the commit (one round trip for both). It charges what the
    // run has spent by this step, which is paid whether or not this commit wins: a stale
    // commit lost to another attempt acting on the same journaled decision (I3), or to a
    // cancel, after the model was paid. Charges are idempotent per run total. A finish
    // charges too: it makes up a charge an earlier step lost in a crash.
    const charged = c || t.kind === 'finish' ? deps.quotas.charge(t.change.to) : undefined;
    charged?.catch(() => undefined); // awaited below, once the commit has landed
    const next = await deps.store.compareAndSet({ from, ...t.change });
    // A finished run's charge lands before its finish hook and its indexes: a crash before
    // it leaves the run in the active-runs index, where the reaper charges it.
    if (TERMINAL_STATUSES.includes(next.status)) await charged;
    await Promise.all([charged, deps.store.afterCommit(from, next, t.change.approvals ?? [])]);
    const m = deps.metrics;
    const facts = commitFacts(t, deps.knownTool);
    count(facts);
    for (const f of facts.approvalsCreated) m.approvalsCreated.inc(f);
    if (c) {
      m.modelTokens.inc({ model: c.model, type: 'prompt', tenant: from.tenantId }, c.promptTokens);
      m.modelTokens.inc({ model: c.model, type: 'completion', tenant: from.tenantId }, c.completionTokens);
      if (!c.priced) m.modelPriceMissing.inc({ model: c.model });
      m.modelTokenUsage.observe({ model: c.model, type: 'prompt' }, c.promptTokens);
      m.modelTokenUsage.observe({ model: c.model, type: 'completion' }, c.completionTokens);
      m.modelCost.inc({ model: c.model, tenant: from.tenantId }, c.costUsd);
    }
    if (t.change.step) m.steps.inc({ outcome: STEP_OUTCOME[t.kind] });
    if (t.kind === 'finish') {
      m.runsFinished.inc({ agent: from.agent, status: t.status, reason: t.reason });
      if (t.status === 'failed' && t.reason !== 'input_rejected') m.budgetStops.inc({ reason: t.reason });
    }
    if (t.log) log[t.log.level](t.log.fields ?? {}, t.log.msg);
    if (t.kind === 'continue') await ensureNext(next);
    if (t.kind === 'park') {
      for (const e of requested) await deps.feed.publish(from.tenantId, e);
      await scheduleExpiry(t.newApprovals);
    }
    return next;
  }

  function count(facts: RecordFacts): void {
    for (const f of facts.toolCalls) deps.metrics.toolCalls.inc(f);
    for (const tool of facts.effectsUncertain) deps.metrics.effectsUncertain.inc({ tool });
  }

  /** Counts the calls of a step record committed outside a Transition (recorded after the run's finish). */
  function countToolCalls(step: StepRecord): void {
    count(recordFacts(step, deps.knownTool));
  }

  return { apply, ensureNext, countToolCalls };
}

export type TransitionApplier = ReturnType<typeof createTransitionApplier>;
