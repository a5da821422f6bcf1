import { randomUUID } from 'node:crypto';
import type { AgentCatalog } from '../agents/agent-profile.js';
import { decisionRights, mayReadRun, overseesTenant } from '../approvals/decision-rights.js';
import { approvalsNeeded } from '../approvals/quorum.js';
import type { TenantQuotas } from '../budgets/tenant-quotas.js';
import type { TransitionApplier } from '../engine/apply-transition.js';
import type { Compensator } from '../engine/compensation.js';
import { runEvent } from '../engine/run-event.js';
import { finishRun, retryOnStale } from '../engine/run-transitions.js';
import { ConflictError, ForbiddenError, InvalidRequestError, NotFoundError } from '../errors.js';
import type { PiiMasker } from '../guards/pii-masker.js';
import type { SseSource } from '../http/sse.js';
import { runKeys, tenantKeys } from '../keys.js';
import type { Metrics } from '../metrics.js';
import type { Enqueue } from '../queue/job-catalog.js';
import type { ListRunsQuery, SubmitRunBody } from '../schemas/api.js';
import type { Approval } from '../schemas/approval.js';
import type { Compensation } from '../schemas/compensation.js';
import type { Principal } from '../schemas/identity.js';
import { type RunRecord, TERMINAL_STATUSES, ZERO_USAGE } from '../schemas/run.js';
import type { ApprovalView, RunTrace, RunView } from '../schemas/views.js';
import { approvalEvent } from '../store/approval-feed.js';
import type { DecisionJournal } from '../store/decision-journal.js';
import { decodeCursor, encodeCursor } from '../store/index-pager.js';
import type { RunStore } from '../store/run-store.js';
import { newTraceparent, traceIdOf } from '../tracing/trace-context.js';
import { bodyHash, replayOf } from './idempotency.js';
import { type SessionSettings, sessionHistory } from './session-history.js';

/** How long a claimed Idempotency-Key waits for its run to be created before it lapses (a crash in between). */
const CLAIM_TTL_SECONDS = 60;

/** Operator-set upper bounds for what a run may ask for in `limits`. */
export interface LimitCeilings {
  maxSteps: number;
  maxTokens: number;
  timeoutMs: number;
}

export interface RunServiceDeps {
  store: RunStore;
  /** Commits a cancel (the run's finish: its hooks, counters and feed events). */
  applier: Pick<TransitionApplier, 'apply'>;
  journal: DecisionJournal;
  quotas: TenantQuotas;
  ceilings: LimitCeilings;
  agents: AgentCatalog;
  enqueue: Enqueue;
  metrics: Metrics;
  sessions: SessionSettings;
  /** Masks what event streams carry, as the run's final answer is. */
  masker: PiiMasker;
  /** Undo of finished runs (`POST /v1/runs/:id/compensate`). */
  compensator?: Pick<Compensator, 'request'>;
  idempotencyTtlSeconds?: number;
  now?: () => number;
}

/** An approval as callers see it, with who may decide it (what `mayDecide` enforces). */
export const approvalView = ({ schemaVersion: _v, ...a }: Approval): ApprovalView => ({
  ...a,
  deciders: decisionRights(a),
  ...(a.quorum !== undefined ? { approvalsNeeded: a.status === 'pending' ? approvalsNeeded(a) : 0 } : {}),
});

export function runView(run: RunRecord, approvals: Approval[]): RunView {
  const pending = approvals.filter((a) => run.pendingApprovals.includes(a.id));
  return {
    id: run.id,
    traceId: run.traceId,
    status: run.status,
    ...(run.reason ? { reason: run.reason } : {}),
    agent: run.agent,
    input: run.input,
    ...(run.sessionId ? { sessionId: run.sessionId } : {}),
    ...(run.finalAnswer !== undefined ? { finalAnswer: run.finalAnswer } : {}),
    ...(run.output !== undefined ? { output: run.output } : {}),
    step: run.step,
    usage: run.usage,
    costUsd: run.costUsd,
    limits: run.limits,
    metadata: run.metadata,
    pendingApprovals: pending.map(approvalView),
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    deadlineAt: run.deadlineAt,
  };
}

export const compensationView = ({ schemaVersion: _v, ...c }: Compensation) => c;

/** Submit, read, list and cancel runs on behalf of an authenticated caller. */
export function createRunService(deps: RunServiceDeps) {
  const now = deps.now ?? Date.now;

  /**
   * A run is visible to its owner and to those who oversee the tenant (approvers and
   * up); anyone else — another user, another tenant — gets a 404 exactly like a missing run.
   */
  async function visibleRun(principal: Principal, id: string): Promise<RunRecord> {
    const run = await deps.store.get(id);
    if (!run || !mayReadRun(principal, run)) throw new NotFoundError(`run ${id}`);
    return run;
  }

  async function view(run: RunRecord) {
    return runView(run, run.pendingApprovals.length ? await deps.store.approvals(run.id) : []);
  }

  return {
    /** `traceparent`: the trace the run belongs to (see `submitSpan`); a new one when omitted. */
    async submit(
      principal: Principal,
      body: SubmitRunBody,
      idempotencyKey?: string,
      traceparent = newTraceparent(),
    ): Promise<{ run: RunView; created: boolean }> {
      const profile = deps.agents.get(body.agent ?? deps.agents.defaultAgent);
      const limits = { ...profile.limits, ...body.limits };
      for (const [name, ceiling] of Object.entries(deps.ceilings) as Array<[keyof LimitCeilings, number]>) {
        if (limits[name] > ceiling)
          throw new InvalidRequestError(`limits.${name} may be at most ${ceiling} (the operator's ceiling)`, 'limit_above_ceiling');
      }
      const replay = async (runId: string) => ({ run: await view(await visibleRun(principal, runId)), created: false });
      const id = randomUUID();
      const idem = idempotencyKey
        ? {
            key: tenantKeys(principal.tenantId).idempotency(principal.userId, idempotencyKey),
            claim: { runId: id, bodyHash: bodyHash(body), bound: false },
          }
        : undefined;
      if (idem) {
        const held = await deps.store.claimIdempotencyKey(idem.key, idem.claim, CLAIM_TTL_SECONDS);
        if (held) return replay(replayOf(held, idem.claim.bodyHash));
      }
      const at = now();
      const fresh: RunRecord = {
        schemaVersion: 1,
        id,
        traceId: traceIdOf(traceparent),
        traceparent,
        tenantId: principal.tenantId,
        userId: principal.userId,
        roles: principal.roles,
        agent: profile.name,
        input: body.input,
        ...(body.sessionId ? { sessionId: body.sessionId } : {}),
        metadata: body.metadata ?? {},
        limits,
        status: 'queued',
        step: 0,
        usage: ZERO_USAGE,
        costUsd: 0,
        pendingApprovals: [],
        version: 0,
        createdAt: new Date(at).toISOString(),
        updatedAt: new Date(at).toISOString(),
        deadlineAt: new Date(at + limits.timeoutMs).toISOString(),
      };
      let admitted = false;
      let run = fresh;
      try {
        await deps.quotas.admit(principal.tenantId, id); // 429 before anything is written
        admitted = true;
        // One active run per session: the next one must see this one's answer.
        const claimSession = async () => {
          const holder = await deps.store.claimSession(fresh);
          if (holder) throw new ConflictError('session_busy', `run ${holder} of session ${body.sessionId} is still active`);
        };
        await claimSession();
        // Read after the claim, so the previous run of the session has finished and is seen.
        const history = body.sessionId
          ? await sessionHistory(
              deps.store,
              { tenantId: principal.tenantId, userId: principal.userId, sessionId: body.sessionId },
              deps.sessions,
            )
          : [];
        if (body.sessionId) run = { ...fresh, historyMessages: history.length };
        // Renew the claim just before creating: a claim only lapses after SESSION_CLAIM_MS without a run.
        await claimSession();
        await deps.store.create(
          run,
          { role: 'user', content: body.input },
          runEvent('run.queued', id, 0, { agent: run.agent, traceId: run.traceId }),
          history,
        );
      } catch (err) {
        // No run: give its quota slot and its session back, and free the key for the retry (a key is bound only to a run that exists).
        if (admitted) await deps.quotas.release(principal.tenantId, id).catch(() => {});
        await deps.store.releaseSession(fresh).catch(() => {});
        if (idem) await deps.store.releaseIdempotencyKey(idem.key, idem.claim).catch(() => {});
        throw err;
      }
      if (idem) await deps.store.bindIdempotencyKey(idem.key, idem.claim, deps.idempotencyTtlSeconds ?? 86_400);
      await deps.enqueue('step', { runId: id, step: 0, traceparent, tenantId: principal.tenantId });
      deps.metrics.runsSubmitted.inc({ agent: run.agent });
      return { run: await view(run), created: true };
    },

    /** The run, with its saga compensation when it has one (`status: failed` is the compensation_failed state). */
    async get(principal: Principal, id: string) {
      const run = await visibleRun(principal, id);
      const compensation = await deps.store.compensation(id);
      return { ...(await view(run)), ...(compensation ? { compensation: compensationView(compensation) } : {}) };
    },

    /** An approver undoes a finished run's completed writes, latest first. */
    async compensate(principal: Principal, id: string) {
      if (!deps.compensator) throw new ConflictError('compensation_unavailable', 'this service cannot compensate runs');
      return compensationView(await deps.compensator.request(principal, id));
    },

    /**
     * The run's event stream for `GET /v1/runs/:id/events`: every event PII-masked like the
     * final answer (deltas are masked when published, where a match cannot be cut in two),
     * ending at run.finished, or at once for a finished run whatever cursor the reader resumes from.
     */
    async events(principal: Principal, id: string): Promise<SseSource> {
      await visibleRun(principal, id); // 404 before the stream opens
      return {
        key: runKeys(id).events,
        read: async (cursor) =>
          (await deps.store.readEvents(id, cursor)).map(({ id: at, event }) => ({
            id: at,
            event: { ...event, data: deps.masker.maskDeep(event.data) as typeof event.data },
          })),
        isLast: (entry) => entry.event.type === 'run.finished',
        ended: async () => {
          const run = await deps.store.get(id);
          return !run || TERMINAL_STATUSES.includes(run.status);
        },
      };
    },

    async trace(principal: Principal, id: string): Promise<RunTrace> {
      const run = await visibleRun(principal, id);
      const [steps, approvals] = await Promise.all([deps.store.steps(id), deps.store.approvals(id)]);
      const byId = new Map(approvals.map((a) => [a.id, approvalView(a)]));
      const end = TERMINAL_STATUSES.includes(run.status) ? Date.parse(run.updatedAt) : now();
      return {
        runId: run.id,
        traceId: run.traceId,
        status: run.status,
        ...(run.reason ? { reason: run.reason } : {}),
        input: run.input,
        // Plan mode: the plan, its decision, and which steps the run's tool calls (`planStep`) carried out.
        ...(run.plan ? { plan: { ...run.plan, ...(run.plan.approvalId ? { approval: byId.get(run.plan.approvalId) } : {}) } } : {}),
        steps: steps.map((s) => ({
          index: s.index,
          model: s.model,
          thought: s.thought,
          toolCalls: s.toolCalls.map((c) => ({ ...c, ...(c.approvalId ? { approval: byId.get(c.approvalId) } : {}) })),
          usage: s.usage,
          costUsd: s.costUsd,
          durationMs: s.durationMs,
        })),
        finalAnswer: run.finalAnswer ?? null,
        elapsedMs: end - Date.parse(run.createdAt),
        totalTokens: run.usage.totalTokens,
        costUsd: run.costUsd,
      };
    },

    /** The exact model requests and replies of a run, for replay: admins only (they hold prompts and PII). */
    async snapshots(principal: Principal, id: string) {
      if (!principal.roles.includes('admin')) throw new ForbiddenError('decision snapshots are readable by admins only');
      const run = await visibleRun(principal, id);
      return { runId: run.id, traceId: run.traceId, snapshots: await deps.journal.snapshots(run.id) };
    },

    /** Runs of the caller's tenant: approvers and admins may filter by user, everyone else sees their own. */
    async list(principal: Principal, q: ListRunsQuery) {
      if (q.userId && q.userId !== principal.userId && !overseesTenant(principal))
        throw new ForbiddenError("listing another user's runs needs the approver role or above");
      const userId = overseesTenant(principal) ? q.userId : principal.userId;
      const { runs, next } = await deps.store.list(
        principal.tenantId,
        { status: q.status, agent: q.agent, userId },
        { limit: q.limit, after: q.createdAfter, before: q.createdBefore, cursor: q.cursor ? decodeCursor(q.cursor) : undefined },
      );
      return { runs: await Promise.all(runs.map(view)), ...(next ? { nextCursor: encodeCursor(next) } : {}) };
    },

    /** The caller's own session: its runs, oldest first (sessions are per tenant and user). */
    async session(principal: Principal, sessionId: string) {
      const ids = await deps.store.sessionRunIds(principal.tenantId, principal.userId, sessionId);
      const runs = (await deps.store.getMany(ids)).filter((r): r is RunRecord => r !== null);
      if (runs.length === 0) throw new NotFoundError(`session ${sessionId}`);
      return { id: sessionId, runs: await Promise.all(runs.map(view)) };
    },

    /** Cancels a non-terminal run; its pending approvals are withdrawn in the same commit. */
    async cancel(principal: Principal, id: string) {
      // A worker may commit meanwhile: look again (bounded).
      return retryOnStale(async () => {
        const run = await visibleRun(principal, id);
        if (TERMINAL_STATUSES.includes(run.status)) throw new ConflictError('run_finished', `run ${id} already ${run.status}`);
        const at = new Date(now()).toISOString();
        const withdrawn = (await deps.store.approvals(id))
          .filter((a) => a.status === 'pending')
          .map((a): Approval => ({ ...a, status: 'withdrawn', decidedBy: principal.userId, decidedAt: at, comment: 'run cancelled' }));
        const change = finishRun(run, { status: 'cancelled', reason: 'cancelled', by: principal.userId }, {}, { approvals: withdrawn }, at);
        const next = await deps.applier.apply(run, {
          kind: 'cancel',
          change,
          followUps: { feed: withdrawn.map((a) => approvalEvent(a, true)) },
        });
        return view(next);
      });
    },
  };
}

export type RunService = ReturnType<typeof createRunService>;
