import type { Approval, Compensation, CompensationStatus, CompensationStep, Principal, WebhookEventType } from '@rein/contract';
import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import type { AgentCatalog, Tool } from '@rein/define/internal';
import { type CompensateJob, compensateJobSchema, type Enqueue, UNDO_ROUTE } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import { approvalEvent } from '../../adapters/redis/approval-feed.js';
import type { CircuitBreakers } from '../../adapters/resilience/circuit-breakers.js';
import { hashArguments } from '../../policy/app/argument-hash.js';
import { approvalId } from '../../policy/approvals/approval-id.js';
import { mayReadRun, overseesTenant } from '../../policy/approvals/decision-rights.js';
import type { EffectLedger } from '../../policy/ports/effect-ledger.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { runEvent } from '../../policy/run/run-event.js';
import { retryOnStale } from '../../policy/run/run-transitions.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { TransitionApplier } from '../../step/apply-transition.js';
import type { RunEndPlug } from '../run-end.js';
import { runUndo } from './undo-call.js';

export { compensationKey } from './undo-call.js';

export interface CompensatorDeps {
  store: RunRepository & TurnJournal;
  /** Commits a plan's approval on the finished run (and counts, announces and times it). */
  applier: Pick<TransitionApplier, 'apply'>;
  ledger: EffectLedger;
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  enqueue: Enqueue;
  metrics: Metrics;
  logger: Logger;
  /** Webhook events of the compensation (`run.compensated`, `compensation.failed`). */
  emit: (tenantId: string, type: WebhookEventType, key: string, data: Record<string, unknown>) => Promise<void>;
  toolTimeoutMs: number;
  approvalTtlMs: number;
  /** REIN_MAX_TOOL_RESULT_BYTES: an undo's result is cut like any tool result. */
  maxResultBytes?: number;
  /** A compensation ended (done, failed or declined): a session waiting on a rolled-back run may go on. */
  onSettled?: (run: RunRecord) => Promise<void>;
  /** The tools' breakers (workers); omitted, undo calls run unguarded (engine tests). */
  breakers?: CircuitBreakers;
  now?: () => number;
}

/** A saga's states in which no round is under way: a new one may start. */
const SETTLED: readonly CompensationStatus[] = ['done', 'failed', 'declined'];

/** The write an undo step is about: the same in every round of the saga. */
const writeOf = (s: CompensationStep) => `${s.runId ?? ''}:${s.step}:${s.toolCallId}`;

/**
 * The undos a round runs: the pending ones before the first that did not happen (failed or
 * uncertain), since earlier writes may depend on later ones being undone first.
 */
const runnable = (steps: readonly CompensationStep[]): CompensationStep[] => {
  const stop = steps.findIndex((s) => s.status === 'failed' || s.status === 'uncertain');
  return (stop < 0 ? steps : steps.slice(0, stop)).filter((s) => s.status === 'pending');
};

/** The tool that undoes a write of `tool`, if it declares one. */
const undoOf = (tool: Tool | undefined) =>
  tool?.kind === 'write' && (tool.compensate || tool.compensateWith) ? (tool.compensateWith?.tool ?? tool.name) : null;

/**
 * The undo plan of a run: its successful calls of compensable write tools and its
 * sub-agent runs' (the whole tree below it), latest first.
 */
async function planOf(deps: Pick<CompensatorDeps, 'store' | 'tools'>, run: RunRecord): Promise<CompensationStep[]> {
  const writes: Array<CompensationStep & { finishedAt: string }> = [];
  const collect = async (runId: string, depth: number): Promise<void> => {
    for (const s of await deps.store.steps(runId)) {
      for (const call of s.toolCalls) {
        // A replay's call (it has a `source`) never ran a write: its recorded result is the original's effect, not its own.
        const undoTool = call.outcome === 'ok' && !call.fromSnapshot && !call.source ? undoOf(deps.tools.get(call.name)) : null;
        if (!undoTool) continue;
        const own = runId === run.id ? {} : { runId };
        writes.push({
          ...own,
          step: s.index,
          toolCallId: call.id,
          tool: call.name,
          undoTool,
          arguments: call.arguments,
          status: 'pending',
          finishedAt: s.finishedAt,
        });
      }
    }
    // Bounded: a tree is at most REIN_MAX_AGENT_DEPTH deep; the guard only protects against a corrupt index.
    if (depth < 16) for (const child of await deps.store.children(runId)) await collect(child.id, depth + 1);
  };
  await collect(run.id, 0);
  // Latest first across the tree; within one step, the later call first (as for a run alone).
  return writes
    .map((w, i) => ({ w, i }))
    .sort((a, b) => b.w.finishedAt.localeCompare(a.w.finishedAt) || b.i - a.i)
    .map(({ w: { finishedAt: _at, ...step } }) => step);
}

/**
 * An approver's request takes a saga up again: from the undo that failed (or whose outcome
 * is unknown: the approver asking again has checked it) on, each such undo with a new retry
 * number, so it runs once more under a ledger key of its own, and exactly once; a declined
 * undo (it never ran) is asked for again as it was.
 */
const retried = (steps: readonly CompensationStep[]): CompensationStep[] =>
  steps.map((s) => {
    if (s.status === 'declined') return { ...s, status: 'pending' };
    if (s.status !== 'failed' && s.status !== 'uncertain') return s;
    const { observation: _observation, at: _at, ...undo } = s;
    return { ...undo, status: 'pending', retry: (s.retry ?? 0) + 1 };
  });

/**
 * The steps of a saga's next round: the writes of the run's tree that no earlier round
 * covers (recorded after it was planned: a call in flight when the run ended), latest
 * first and ahead of the earlier rounds' steps, which keep where they got to (`again`:
 * an approver's request, which takes failed and declined undos up again).
 */
async function nextSteps(
  deps: Pick<CompensatorDeps, 'store' | 'tools'>,
  run: RunRecord,
  held: Compensation | null,
  again: boolean,
): Promise<CompensationStep[]> {
  const covered = new Set(held?.steps.map(writeOf));
  const fresh = (await planOf(deps, run)).filter((s) => !covered.has(writeOf(s)));
  const earlier = held ? (again ? retried(held.steps) : held.steps) : [];
  return [...fresh, ...earlier];
}

/** Saves a round's new state and says so in the run's events. */
async function save(
  deps: Pick<CompensatorDeps, 'store'>,
  run: RunRecord,
  c: Compensation,
  event: Parameters<typeof runEvent>[0],
  data: Record<string, unknown>,
) {
  await deps.store.saveCompensation(c, run.id);
  await deps.store.appendEvent(runEvent(event, run.id, undefined, { round: c.round, status: c.status, ...data }));
}

/** Starts a round (`replacing`: only over a saga in one of these states); a running one gets its job. Returns whether it started. */
async function startRound(
  deps: Pick<CompensatorDeps, 'store' | 'enqueue'>,
  run: RunRecord,
  c: Compensation,
  replacing?: readonly CompensationStatus[],
): Promise<boolean> {
  if (!(await deps.store.saveCompensation(c, run.id, true, replacing))) return false;
  await deps.store.appendEvent(
    runEvent('compensation.started', run.id, undefined, {
      round: c.round,
      status: c.status,
      trigger: c.trigger,
      steps: runnable(c.steps).length,
    }),
  );
  if (c.status === 'running')
    await deps.enqueue('compensate', { runId: run.id, round: c.round, traceparent: run.traceparent }, { route: UNDO_ROUTE });
  return true;
}

/** The approval of a plan: one approval of the whole list of undo actions the round runs, on the finished run. */
async function askApproval(deps: CompensatorDeps, run: RunRecord, c: Compensation): Promise<Approval> {
  const at = (deps.now ?? Date.now)();
  const undo = runnable(c.steps).map((s) => ({
    tool: s.undoTool,
    undoes: s.tool,
    arguments: s.arguments,
    ...(s.runId ? { runId: s.runId } : {}),
    step: s.step,
    toolCallId: s.toolCallId,
  }));
  const approval: Approval = {
    schemaVersion: 1,
    // A step index no step of the finished run reached: never another approval's id.
    id: approvalId(run.id, run.step + 1, c.round - 1),
    runId: run.id,
    step: run.step + 1,
    toolCallId: `compensation-${c.round}`,
    tenantId: run.tenantId,
    requestedBy: run.userId,
    toolName: 'compensation',
    arguments: { undo },
    argsHash: hashArguments({ undo }),
    policyVersion: 1,
    summary: `Undo ${undo.length} write(s) of this ${run.status} run, latest first: ${undo.map((u) => `${u.tool} (undoes ${u.undoes})`).join(', ')}`,
    risk: 'high',
    requiredRole: 'approver',
    status: 'pending',
    createdAt: new Date(at).toISOString(),
    expiresAt: new Date(at + deps.approvalTtlMs).toISOString(),
  };
  // Committed on the finished run (from a finish hook, maybe): not a finish, so no finish hooks again.
  await retryOnStale(async () => {
    const fresh = await deps.store.require(run.id);
    const change = {
      to: { ...fresh, updatedAt: approval.createdAt },
      approvals: [approval],
      events: [runEvent('approval.requested', run.id, approval.step, { approvalId: approval.id, toolName: 'compensation' })],
    };
    // Expiry is enforced by a timer, as for any approval; an expired plan is declined.
    await deps.applier.apply(fresh, {
      kind: 'compensate',
      change,
      followUps: { feed: [approvalEvent(approval, false)], expiry: [approval] },
    });
  });
  return approval;
}

/**
 * A finish hook (the applier's, run again when a write of the finished run is recorded
 * late): a failed or cancelled run with completed writes is compensated by its agent's
 * policy. A run rolled back by a new run of its session (`ifBusy: rollback`) is
 * compensated whatever the policy: `ask` still asks, otherwise it runs. A write no round
 * covers yet starts the next round once the last one is over. Returns whether it started one.
 */
async function nextRound(deps: CompensatorDeps, run: RunRecord): Promise<boolean> {
  if (run.parentRunId) {
    // A sub-agent's writes are its tree's: the root's saga undoes them with its own (one plan, one approval),
    // including one recorded after the root ended (a leaf's call in flight when the root was cancelled).
    const root = await deps.store.get(run.rootRunId ?? run.parentRunId);
    return root !== null && TERMINAL_STATUSES.includes(root.status) && !root.parentRunId && nextRound(deps, root);
  }
  if (run.status !== 'failed' && run.status !== 'cancelled') return false;
  const agentPolicy = deps.agents.get(run.agent).compensation;
  const policy = run.interruption?.rollback && agentPolicy === 'never' ? 'auto' : agentPolicy;
  if (policy === 'never') return false;
  // A round under way looks for writes it did not cover when it ends (settle); a decided
  // plan's approval stays decided (the reaper may call this again after a crash).
  const held = await deps.store.compensation(run.id);
  if (held && !SETTLED.includes(held.status)) return false;
  const steps = await nextSteps(deps, run, held, false);
  if (runnable(steps).length === 0) return false;
  const at = new Date((deps.now ?? Date.now)()).toISOString();
  const base = {
    schemaVersion: 1 as const,
    round: (held?.round ?? 0) + 1,
    trigger: policy,
    requestedBy: run.userId,
    steps,
    createdAt: at,
    updatedAt: at,
  };
  const replacing = held ? [held.status] : undefined;
  if (policy === 'auto') return startRound(deps, run, { ...base, status: 'running' }, replacing);
  const approval = await askApproval(deps, run, { ...base, status: 'pending' });
  return startRound(deps, run, { ...base, status: 'pending', approvalId: approval.id }, replacing);
}

/**
 * Saga compensation: when a run ends failed or cancelled (or an approver asks), the
 * completed writes whose tools declare an undo are undone in reverse order, by a
 * `compensate` job. Each undo goes through the effect ledger under its own key, so a
 * worker killed mid-way leaves either a result (reused) or an intent (re-run only if
 * the tool honours idempotency keys, else `uncertain`); the state lives beside the run
 * (`RunStore.compensation`) and every change is a run event, a metric and, at the end,
 * a webhook event.
 */
export function createCompensator(deps: CompensatorDeps) {
  const now = deps.now ?? Date.now;
  const iso = () => new Date(now()).toISOString();

  async function finish(run: RunRecord, c: Compensation): Promise<void> {
    const failed = c.steps.some((s) => s.status === 'failed' || s.status === 'uncertain');
    const done: Compensation = {
      ...c,
      status: failed ? 'failed' : 'done',
      ...(failed ? { code: 'compensation_failed' } : {}),
      updatedAt: iso(),
    };
    await save(deps, run, done, 'compensation.finished', failed ? { code: 'compensation_failed' } : {});
    const data = { runId: run.id, round: c.round, status: done.status, steps: done.steps, at: done.updatedAt };
    await deps.emit(run.tenantId, failed ? 'compensation.failed' : 'run.compensated', `${run.id}:${c.round}`, data);
    const log = failed ? deps.logger.error.bind(deps.logger) : deps.logger.info.bind(deps.logger);
    log({ runId: run.id, round: c.round }, failed ? 'compensation failed: a person must finish it' : 'run compensated');
    await settle(run);
  }

  /**
   * A round ended: a write recorded while it ran starts the next one (before the session,
   * which waits for the undo, is told), else whoever waits for the undo may go on.
   */
  async function settle(run: RunRecord): Promise<void> {
    if (!(await nextRound(deps, run))) await deps.onSettled?.(run);
  }

  return {
    /** The finish hook: see nextRound. */
    async onRunFinished(run: RunRecord): Promise<void> {
      await nextRound(deps, run);
    },

    /** Whether the run's undo is over (done, failed or declined), or it has nothing to undo. */
    async settled(run: RunRecord): Promise<boolean> {
      const c = await deps.store.compensation(run.id);
      if (c) return SETTLED.includes(c.status);
      return (await planOf(deps, run)).length === 0;
    },

    /**
     * `POST /v1/runs/:id/compensate`: an approver undoes a finished run (their request is the
     * decision) — its whole tree, from where its saga got to: writes no round covered yet,
     * failed and declined undos; the undos done stay done.
     */
    async request(principal: Principal, runId: string): Promise<Compensation> {
      const run = await deps.store.get(runId);
      if (!run || !mayReadRun(principal, run)) throw new NotFoundError(`run ${runId}`);
      if (!overseesTenant(principal)) throw new ForbiddenError('undoing a run needs the approver role or above');
      if (!TERMINAL_STATUSES.includes(run.status)) throw new ConflictError('run_not_finished', `run ${runId} is still ${run.status}`);
      const held = await deps.store.compensation(runId);
      const busy = () =>
        new ConflictError('compensation_exists', `run ${runId} has a compensation under way (${held?.status ?? 'just started'})`);
      if (held && !SETTLED.includes(held.status)) throw busy();
      const steps = await nextSteps(deps, run, held, true);
      if (runnable(steps).length === 0)
        throw new ConflictError(
          'nothing_to_compensate',
          held ? `every write of run ${runId} is undone already` : `run ${runId} has no completed write that declares an undo`,
        );
      const at = iso();
      const c: Compensation = {
        schemaVersion: 1,
        round: (held?.round ?? 0) + 1,
        status: 'running',
        trigger: 'request',
        requestedBy: principal.userId,
        steps,
        createdAt: at,
        updatedAt: at,
      };
      // Replaces only the very round read: of two requests at once, one starts the next round.
      if (!(await startRound(deps, run, c, held ? [held.status] : undefined))) throw busy();
      return c;
    },

    /** The approval service: a plan's approval was decided; its job applies (or drops) the plan. */
    async decided(run: RunRecord): Promise<void> {
      const c = await deps.store.compensation(run.id);
      if (c?.status === 'pending')
        await deps.enqueue('compensate', { runId: run.id, round: c.round, traceparent: run.traceparent }, { route: UNDO_ROUTE });
    },

    /** The `compensate` job: resumes wherever a killed worker left it; each undo runs at most once. */
    async process(job: CompensateJob, lastAttempt: boolean): Promise<string> {
      const run = await deps.store.get(job.runId);
      let c: Compensation | null = run ? await deps.store.compensation(job.runId) : null;
      if (!run || !c || c.round !== job.round) return 'stale';
      if (c.status === 'pending') {
        const approval = (await deps.store.approvals(run.id)).find((a) => a.id === c?.approvalId);
        if (approval?.status === 'pending') return 'waiting';
        if (approval?.status !== 'approved') {
          // The writes this round would have undone stand: the view says so, step by step.
          const asked = new Set(runnable(c.steps));
          const steps = c.steps.map((s): CompensationStep => (asked.has(s) ? { ...s, status: 'declined', at: iso() } : s));
          await save(deps, run, { ...c, steps, status: 'declined', updatedAt: iso() }, 'compensation.finished', {
            approval: approval?.status ?? null,
          });
          await settle(run);
          return 'declined';
        }
        c = { ...c, status: 'running', updatedAt: iso() };
        await save(deps, run, c, 'compensation.started', { approvedBy: approval.decidedBy ?? null });
      }
      if (c.status !== 'running') {
        // A retried job of a round that ended: what its end starts (the next round, the session going on) is done again, idempotently.
        if (SETTLED.includes(c.status)) await settle(run);
        return c.status;
      }
      for (const [i, s] of c.steps.entries()) {
        // An undo of an earlier round that did not happen still stops this one at its place.
        if (s.status === 'failed' || s.status === 'uncertain') break;
        if (s.status !== 'pending') continue;
        const out = await runUndo(deps, run, s, lastAttempt);
        const { replayed, ...result } = out;
        deps.metrics.compensations.inc({ tool: s.tool, outcome: replayed ? 'replayed' : out.status === 'done' ? 'ok' : out.status });
        const steps: CompensationStep[] = c.steps.map((x, j) => (j === i ? { ...x, ...result, at: iso() } : x));
        c = { ...c, steps, updatedAt: iso() };
        await save(deps, run, c, 'compensation.step', {
          tool: s.tool,
          undoTool: s.undoTool,
          step: s.step,
          toolCallId: s.toolCallId,
          outcome: out.status,
        });
        // An undo that did not happen stops the saga: the ones before it may depend on it.
        if (out.status !== 'done') break;
      }
      await finish(run, c);
      return (await deps.store.compensation(run.id))?.status ?? 'gone';
    },

    /** The job ran out of attempts (or kept killing workers): the compensation needs a person. */
    async giveUp(job: CompensateJob, why: string): Promise<void> {
      const run = await deps.store.get(job.runId);
      const c = run ? await deps.store.compensation(job.runId) : null;
      if (!run || !c || c.round !== job.round || c.status !== 'running') return;
      // The undo that was running is the first one still pending.
      const stuck = c.steps.findIndex((s) => s.status === 'pending');
      const steps: CompensationStep[] = c.steps.map((s, i) => (i === stuck ? { ...s, status: 'failed', observation: why } : s));
      const undone = steps.find((s) => s.status === 'failed');
      if (undone) deps.metrics.compensations.inc({ tool: undone.tool, outcome: 'failed' });
      await finish(run, { ...c, steps });
    },
  };
}

export type Compensator = ReturnType<typeof createCompensator>;

/** A compensation round; on its last attempt it gives up on what it could not undo, and its final failure marks the compensation failed. */
export const compensationJobs = (compensator: Pick<Compensator, 'process' | 'giveUp'>): JobHandlers<'compensate'> => ({
  compensate: {
    schema: compensateJobSchema,
    run: async (payload, { job }) => `compensation ${await compensator.process(payload, job.attemptsMade + 1 >= (job.opts.attempts ?? 1))}`,
    onFinalFailure: (payload, err) => compensator.giveUp(payload, err.message),
  },
});

/**
 * A finished run's saga starts (a replay has nothing to compensate); a decided plan runs.
 * A saga that cannot start is logged, not thrown: the run's other plugs still run.
 */
export const compensationPlug = (compensator: Pick<Compensator, 'onRunFinished' | 'decided'>, logger: Logger): RunEndPlug => ({
  feature: 'compensation',
  async finished(run) {
    if (run.mode === 'replay') return;
    await compensator
      .onRunFinished(run)
      .catch((err: Error) => logger.error({ runId: run.id, err: err.message }, 'could not start the compensation of a run'));
  },
  decided: (run) => compensator.decided(run),
});
