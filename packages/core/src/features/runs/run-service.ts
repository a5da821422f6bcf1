import { randomUUID } from 'node:crypto';
import type { Approval, ApprovalView, Compensation, Principal, RunTrace, RunView, TreeUsage } from '@rein/contract';
import {
  type ListRunsQuery,
  type RunRecord,
  type SubmitRunBody,
  TERMINAL_STATUSES,
  USAGE_DEFAULT_DAYS,
  type UsageQuery,
  type UsageResponse,
} from '@rein/contract';
import type { AgentCatalog } from '@rein/define/internal';
import type { ArchivedRun, RunArchive, RunTreeParts } from '../../adapters/postgres/run-archive.js';
import { type Enqueue, jobRoute } from '../../adapters/queue/job-catalog.js';
import { approvalEvent } from '../../adapters/redis/approval-feed.js';
import type { DecisionJournal } from '../../adapters/redis/decision-journal.js';
import { decodeCursor, encodeCursor } from '../../adapters/redis/index-pager.js';
import type { SseSource } from '../../adapters/redis/stream-hub.js';
import type { Admission, TenantQuotas } from '../../adapters/redis/tenant-quotas.js';
import { newTraceparent } from '../../adapters/tracing/trace-context.js';
import { mayReadRun, overseesTenant } from '../../policy/approvals/decision-rights.js';
import { decidersOf } from '../../policy/approvals/governance.js';
import type { IdempotencyKeys } from '../../policy/ports/idempotency-keys.js';
import type { RunRepository, StoredEvent } from '../../policy/ports/run-repository.js';
import type { SessionRegistry } from '../../policy/ports/session-registry.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { bodyHash, replayOf } from '../../policy/run/idempotency.js';
import { runEvent } from '../../policy/run/run-event.js';
import { cancelRun, retryOnStale } from '../../policy/run/run-transitions.js';
import { awaitsJob, type VersionWorkers, waitingForVersion } from '../../policy/run/waiting-for-version.js';
import { treeTotal } from '../../policy/step/sub-agents.js';
import { ConflictError, ForbiddenError, InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import type { PiiMasker } from '../../shared/guards/pii-masker.js';
import { runKeys, tenantKeys } from '../../shared/keys.js';
import type { Metrics } from '../../shared/metrics.js';
import type { TransitionApplier } from '../../step/apply-transition.js';
import type { Compensator } from '../compensation/compensation.js';
import { queuedRun } from './queued-run.js';
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
  store: RunRepository & TurnJournal;
  /** Commits a cancel (the run's finish: its hooks, counters and feed events). */
  applier: Pick<TransitionApplier, 'apply'>;
  journal: DecisionJournal;
  quotas: TenantQuotas;
  ceilings: LimitCeilings;
  agents: AgentCatalog;
  enqueue: Enqueue;
  metrics: Metrics;
  sessions: SessionSettings;
  /** Which run holds each session, the runs queued behind it, and its runs' index. */
  sessionRegistry: SessionRegistry;
  idempotencyKeys: IdempotencyKeys;
  /** Masks what event streams carry, as the run's final answer is. */
  masker: PiiMasker;
  /** Undo of finished runs (`POST /v1/runs/:id/compensate`). */
  compensator?: Pick<Compensator, 'request'>;
  idempotencyTtlSeconds?: number;
  /** The app version new runs are pinned to (the promoted one, else this process's); none: runs record no version. */
  currentVersion?: () => string;
  /** The archive of finished runs: what Redis no longer holds is read there, with the same rules. */
  archive?: RunArchive;
  /** Where a run's jobs go and who serves that version: a run's view says when nobody does. */
  versionWorkers?: { route(run: RunRecord): string; workersOf(version: string): Promise<VersionWorkers> };
  now?: () => number;
}

/** An approval as callers see it, with who must still decide it. */
export const approvalView = ({ schemaVersion: _v, ...a }: Approval): ApprovalView => ({ ...a, ...decidersOf(a) });

/** A run's place in its tree, for its view: the sub-agent runs it started and what the tree spent. */
export interface TreeFacts {
  children: NonNullable<RunView['children']>;
  treeUsage: TreeUsage;
}

export function runView(run: RunRecord, approvals: Approval[], tree?: TreeFacts): RunView {
  const pending = approvals.filter((a) => run.pendingApprovals.includes(a.id));
  return {
    id: run.id,
    traceId: run.traceId,
    status: run.status,
    ...(run.reason ? { reason: run.reason } : {}),
    agent: run.agent,
    ...(run.appVersion ? { appVersion: run.appVersion } : {}),
    input: run.input,
    ...(run.sessionId ? { sessionId: run.sessionId } : {}),
    ...(run.queuedBehind ? { queuedBehind: run.queuedBehind } : {}),
    ...(run.interruption ? { interruption: run.interruption } : {}),
    ...(run.finalAnswer !== undefined ? { finalAnswer: run.finalAnswer } : {}),
    ...(run.output !== undefined ? { output: run.output } : {}),
    step: run.step,
    usage: run.usage,
    costUsd: run.costUsd,
    ...(tree ? { treeUsage: tree.treeUsage } : {}),
    ...(run.parentRunId ? { parentRunId: run.parentRunId, rootRunId: run.rootRunId ?? run.parentRunId } : {}),
    ...(run.mode ? { mode: run.mode } : {}),
    ...(run.replayOf ? { replayOf: run.replayOf } : {}),
    ...(run.forkOf ? { forkOf: run.forkOf } : {}),
    ...(tree?.children.length ? { children: tree.children } : {}),
    limits: run.limits,
    metadata: run.metadata,
    pendingApprovals: pending.map(approvalView),
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    deadlineAt: run.deadlineAt,
  };
}

export const compensationView = ({ schemaVersion: _v, ...c }: Compensation) => c;

/** How every run operation finds a run the caller may see: in Redis, else in the tenant's archive; and how it is shown. */
function createRunAccess(deps: RunServiceDeps) {
  const now = deps.now ?? Date.now;

  /**
   * A run is visible to its owner and to those who oversee the tenant (approvers and
   * up); anyone else — another user, another tenant — gets a 404 exactly like a missing run.
   */
  async function visibleRun(principal: Principal, id: string): Promise<RunRecord> {
    return (await locate(principal, id)).run;
  }

  /**
   * The run from Redis, or else (its keys dropped after hot retention) from the archive,
   * which holds only the caller's tenant's runs; either way the same visibility rule.
   */
  async function locate(principal: Principal, id: string): Promise<{ run: RunRecord; archived?: ArchivedRun }> {
    const hot = await deps.store.get(id);
    const archived = hot || !deps.archive ? undefined : ((await deps.archive.readRun(principal.tenantId, id)) ?? undefined);
    const run = hot ?? archived?.run;
    if (!run || !mayReadRun(principal, run)) throw new NotFoundError(`run ${id}`);
    return { run, ...(archived ? { archived } : {}) };
  }

  /** Run documents by id, Redis first, the rest from the tenant's archive; null where neither has one. */
  async function runsById(tenantId: string, ids: string[]): Promise<Array<RunRecord | null>> {
    const hot = await deps.store.getMany(ids);
    const missing = ids.filter((_, i) => hot[i] === null);
    if (!deps.archive || missing.length === 0) return hot;
    const cold = new Map((await deps.archive.runsById(tenantId, missing)).map((r) => [r.id, r]));
    return hot.map((r, i) => r ?? cold.get(ids[i] as string) ?? null);
  }

  /** A run's saga compensation, from Redis or else (its keys dropped after hot retention) from the tenant's archive. */
  async function compensationOf(tenantId: string, id: string): Promise<Compensation | null> {
    const hot = await deps.store.compensation(id);
    if (hot || !deps.archive) return hot;
    return (await deps.archive.readRun(tenantId, id))?.compensation ?? null;
  }

  /** The run's tree parts from Redis (its `children` and `tree` hashes). */
  async function hotTree(run: RunRecord): Promise<RunTreeParts> {
    const [children, [node]] = await Promise.all([deps.store.children(run.id), deps.store.treeNodes([run.id])]);
    return { children, descendants: node?.descendants ?? [] };
  }

  /**
   * A run of a tree (it has a parent or children): its children with their status, its
   * tree's spending — from its tree parts as Redis or the archive holds them, each child's
   * status read wherever that child now is.
   */
  async function treeFacts(run: RunRecord, parts: RunTreeParts): Promise<TreeFacts | undefined> {
    const entries = parts.children;
    if (entries.length === 0 && !run.parentRunId) return undefined;
    const docs = await runsById(
      run.tenantId,
      entries.map((e) => e.id),
    );
    const children = entries
      .flatMap((e, i) => {
        const doc = docs[i];
        return doc ? [{ id: e.id, agent: doc.agent, status: doc.status, createdAt: doc.createdAt }] : [];
      })
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
      .map(({ createdAt: _at, ...c }) => c);
    return { children, treeUsage: treeTotal(run, parts.descendants) };
  }

  async function view(run: RunRecord) {
    const [approvals, tree] = await Promise.all([
      run.pendingApprovals.length ? deps.store.approvals(run.id) : [],
      hotTree(run).then((parts) => treeFacts(run, parts)),
    ]);
    return runView(run, approvals, tree);
  }

  return { now, visibleRun, locate, runsById, compensationOf, treeFacts, view };
}

type RunAccess = ReturnType<typeof createRunAccess>;

const sessionOf = (run: RunRecord) => ({ tenantId: run.tenantId, userId: run.userId, sessionId: run.sessionId ?? '' });

/** Creating a run: ceilings, idempotency, quota admission, its session's claim and history, then its first job. */
function runSubmitter(
  deps: RunServiceDeps,
  access: RunAccess,
  interrupt: (principal: Principal, active: string, by: string, rollback: boolean) => Promise<void>,
) {
  const { now, visibleRun, runsById, compensationOf, view } = access;
  return {
    /**
     * `traceparent`: the trace the run belongs to (see `submitSpan`); a new one when omitted.
     * `runId`: the id to create it under (a schedule's firing); a run that already has it is
     * answered as it is, so firing twice creates one run.
     */
    async submit(
      principal: Principal,
      body: SubmitRunBody,
      idempotencyKey?: string,
      traceparent = newTraceparent(),
      opts: { runId?: string } = {},
    ): Promise<{ run: RunView; created: boolean }> {
      const profile = deps.agents.get(body.agent ?? deps.agents.defaultAgent);
      const limits = { ...profile.limits, ...body.limits };
      for (const [name, ceiling] of Object.entries(deps.ceilings) as Array<[keyof LimitCeilings, number]>) {
        if (limits[name] > ceiling)
          throw new InvalidRequestError(`limits.${name} may be at most ${ceiling} (the operator's ceiling)`, 'limit_above_ceiling');
      }
      const replay = async (runId: string) => ({ run: await view(await visibleRun(principal, runId)), created: false });
      if (opts.runId && (await deps.store.get(opts.runId))) return replay(opts.runId);
      const id = opts.runId ?? randomUUID();
      const idem = idempotencyKey
        ? {
            key: tenantKeys(principal.tenantId).idempotency(principal.userId, idempotencyKey),
            claim: { runId: id, bodyHash: bodyHash(body), bound: false },
          }
        : undefined;
      if (idem) {
        const held = await deps.idempotencyKeys.claim(idem.key, idem.claim, CLAIM_TTL_SECONDS);
        if (held) return replay(replayOf(held, idem.claim.bodyHash));
      }
      const at = now();
      const fresh = queuedRun(
        {
          id,
          traceparent,
          tenantId: principal.tenantId,
          userId: principal.userId,
          roles: principal.roles,
          agent: profile.name,
          ...(deps.currentVersion ? { appVersion: deps.currentVersion() } : {}),
          ...(profile.versioning === 'upgrade' ? { versioning: 'upgrade' as const } : {}),
          input: body.input,
          ...(body.sessionId ? { sessionId: body.sessionId } : {}),
          metadata: body.metadata ?? {},
          limits,
        },
        at,
      );
      let admitted = false;
      let created = false;
      let run = fresh;
      const ifBusy = body.ifBusy ?? 'reject';
      // The run this one waits behind, when its session is busy and the policy queues it.
      let behind: string | null = null;
      // Whether it starts now or waits for a slot (fair share), decided before anything is written.
      let admission: Admission = 'admitted';
      try {
        admission = await deps.quotas.admit(principal.tenantId, id); // 429 before anything is written
        admitted = true;
        // One active run per session: the next one must see this one's answer.
        const claimSession = async () => {
          const holder = await deps.sessionRegistry.claimSession(fresh);
          if (holder && ifBusy === 'reject')
            throw new ConflictError('session_busy', `run ${holder} of session ${body.sessionId} is still active`);
          return holder;
        };
        behind = await claimSession();
        // Read after the claim, so the previous run of the session has finished and is seen.
        let history =
          !behind && body.sessionId
            ? await sessionHistory(
                deps.store,
                deps.sessionRegistry,
                sessionOf(fresh),
                deps.sessions,
                (ids) => runsById(principal.tenantId, ids),
                (r) => compensationOf(principal.tenantId, r.id),
              )
            : [];
        // Renew the claim just before creating: a claim only lapses after SESSION_CLAIM_MS without a run.
        if (!behind) behind = await claimSession();
        if (behind) {
          history = [];
          // Interrupting: it waits behind the active run it cancels, not behind a queued one.
          if (ifBusy === 'interrupt' || ifBusy === 'rollback') behind = (await deps.sessionRegistry.sessionHolder(fresh)) ?? behind;
          run = { ...fresh, queuedBehind: behind };
        } else if (body.sessionId) run = { ...fresh, historyMessages: history.length };
        created = await deps.store.create(
          run,
          // A queued run gets its history and input when it is admitted (runs/session-queue.ts).
          behind ? null : { role: 'user', content: body.input },
          runEvent('run.queued', id, 0, {
            agent: run.agent,
            traceId: run.traceId,
            ...(run.appVersion ? { appVersion: run.appVersion } : {}),
            ...(behind ? { behind } : {}),
          }),
          history,
        );
      } catch (err) {
        // No run: give its quota slot and its session back, and free the key for the retry (a key is bound only to a run that exists).
        if (admitted) await deps.quotas.release(principal.tenantId, id).catch(() => {});
        await deps.sessionRegistry.releaseSession(fresh).catch(() => {});
        if (idem) await deps.idempotencyKeys.release(idem.key, idem.claim).catch(() => {});
        throw err;
      }
      // Another process created this id first (a firing taken twice): its run holds the quota slot.
      if (!created) return replay(id);
      if (idem) await deps.idempotencyKeys.bind(idem.key, idem.claim, deps.idempotencyTtlSeconds ?? 86_400);
      if (behind) {
        await deps.sessionRegistry.joinSessionQueue(run);
        if (ifBusy === 'interrupt' || ifBusy === 'rollback') await interrupt(principal, behind, id, ifBusy === 'rollback');
        // The run ahead may have finished before this one joined the queue: look once now.
        await deps.enqueue('admit', { runId: id, cause: 'queued', traceparent });
      }
      if (admission !== 'admitted') {
        // Into its line only now that its record exists, so whoever hands it a slot finds it; a slot may have freed meanwhile: look once.
        await deps.quotas.wait(principal.tenantId, id, admission);
        await deps.enqueue('slot', { runId: id, tenantId: principal.tenantId, freed: false, traceparent });
      } else if (!behind)
        await deps.enqueue('step', { runId: id, step: 0, traceparent, tenantId: principal.tenantId }, { route: jobRoute(run) });
      deps.metrics.runsSubmitted.inc({ agent: run.agent });
      return { run: await view(run), created: true };
    },
  };
}

/** One run as the caller may see it: its view, its compensation, its event stream, its trace and model snapshots. */
function runDetail(deps: RunServiceDeps, access: RunAccess) {
  const { now, visibleRun, locate, treeFacts, view } = access;
  return {
    /** The run, with its saga compensation when it has one (`status: failed` is the compensation_failed state). */
    async get(principal: Principal, id: string) {
      const { run, archived } = await locate(principal, id);
      const compensation = archived ? archived.compensation : await deps.store.compensation(id);
      const shown = archived
        ? runView(run, archived.approvals, await treeFacts(run, archived.tree ?? { children: [], descendants: [] }))
        : await view(run);
      const by = deps.versionWorkers;
      const version = by && !archived && awaitsJob(run, shown.pendingApprovals, compensation ?? undefined) ? by.route(run) : undefined;
      const waiting = by && version ? waitingForVersion(run, compensation ?? undefined, version, await by.workersOf(version)) : undefined;
      return {
        ...shown,
        ...(compensation ? { compensation: compensationView(compensation) } : {}),
        ...(waiting ? { waitingForVersion: waiting } : {}),
      };
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
    async events(principal: Principal, id: string): Promise<SseSource<StoredEvent>> {
      const { archived } = await locate(principal, id); // 404 before the stream opens
      const archive = archived ? deps.archive : undefined;
      return {
        key: runKeys(id).events,
        read: async (cursor) =>
          (await (archive ? archive.readEvents(principal.tenantId, id, cursor) : deps.store.readEvents(id, cursor))).map(
            ({ id: at, event }) => ({
              id: at,
              event: { ...event, data: deps.masker.maskDeep(event.data) as typeof event.data },
            }),
          ),
        // A descendant's events are copied into this stream too (with their own run id): only this run's finish ends it.
        isLast: (entry) => entry.event.type === 'run.finished' && entry.event.runId === id,
        ended: async () => {
          if (archive) return true;
          const run = await deps.store.get(id);
          return !run || TERMINAL_STATUSES.includes(run.status);
        },
      };
    },

    async trace(principal: Principal, id: string): Promise<RunTrace> {
      const { run, archived } = await locate(principal, id);
      const cold = archived ? await deps.archive?.readTrace(principal.tenantId, id) : undefined;
      const [steps, approvals] = cold ? [cold.steps, cold.approvals] : await Promise.all([deps.store.steps(id), deps.store.approvals(id)]);
      const byId = new Map(approvals.map((a) => [a.id, approvalView(a)]));
      const end = TERMINAL_STATUSES.includes(run.status) ? Date.parse(run.updatedAt) : now();
      return {
        runId: run.id,
        traceId: run.traceId,
        status: run.status,
        ...(run.reason ? { reason: run.reason } : {}),
        ...(run.appVersion ? { appVersion: run.appVersion } : {}),
        input: run.input,
        ...(run.parentRunId ? { parentRunId: run.parentRunId, rootRunId: run.rootRunId ?? run.parentRunId } : {}),
        // Plan mode: the plan, its decision, and which steps the run's tool calls (`planStep`) carried out.
        ...(run.plan ? { plan: { ...run.plan, ...(run.plan.approvalId ? { approval: byId.get(run.plan.approvalId) } : {}) } } : {}),
        steps: steps.map((s) => ({
          index: s.index,
          ...(s.agent ? { agent: s.agent } : {}),
          model: s.model,
          thought: s.thought,
          toolCalls: s.toolCalls.map((c) => ({ ...c, ...(c.approvalId ? { approval: byId.get(c.approvalId) } : {}) })),
          usage: s.usage,
          costUsd: s.costUsd,
          durationMs: s.durationMs,
          // Where it differs from the step before, the run moved to another app version.
          ...(s.appVersion ? { appVersion: s.appVersion } : {}),
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
  };
}

/** Submit, read, list and cancel runs on behalf of an authenticated caller. */
export function createRunService(deps: RunServiceDeps) {
  const access = createRunAccess(deps);
  const { now, visibleRun, runsById, view } = access;

  /**
   * Ends a live run by a caller's word: cancelled, or interrupted by a new run of its
   * session (which, with `rollback`, undoes its writes: the finish hook starts its saga).
   * Its pending approvals are withdrawn in the same commit; a tool call in flight finishes
   * and is recorded after the finish (`recordAfterFinish`).
   */
  async function end(principal: Principal, id: string, interruption?: RunRecord['interruption']): Promise<RunRecord> {
    // A worker may commit meanwhile: look again (bounded).
    return retryOnStale(async () => {
      const run = await visibleRun(principal, id);
      if (TERMINAL_STATUSES.includes(run.status)) throw new ConflictError('run_finished', `run ${id} already ${run.status}`);
      const at = new Date(now()).toISOString();
      const { change, withdrawn } = cancelRun(run, await deps.store.approvals(id), principal.userId, at, interruption);
      return deps.applier.apply(run, { kind: 'cancel', change, followUps: { feed: withdrawn.map((a) => approvalEvent(a, true)) } });
    });
  }

  /** `ifBusy: interrupt | rollback`: the session's active run ends `interrupted`; one that finished meanwhile is left as it is. */
  async function interrupt(principal: Principal, active: string, by: string, rollback: boolean): Promise<void> {
    try {
      await end(principal, active, { by, rollback });
    } catch (err) {
      if (!(err instanceof ConflictError) && !(err instanceof NotFoundError)) throw err;
    }
  }

  const service = {
    ...runSubmitter(deps, access, interrupt),
    ...runDetail(deps, access),

    /** Runs of the caller's tenant: approvers and admins may filter by user, everyone else sees their own. */
    async list(principal: Principal, q: ListRunsQuery) {
      if (q.userId && q.userId !== principal.userId && !overseesTenant(principal))
        throw new ForbiddenError("listing another user's runs needs the approver role or above");
      const userId = overseesTenant(principal) ? q.userId : principal.userId;
      if (q.q !== undefined || q.from !== undefined || q.to !== undefined) {
        // A search: the archive's finished runs (text in inputs and answers, any script).
        if (!deps.archive) throw new ConflictError('archive_unavailable', 'q, from and to search the run archive (REIN_ARCHIVE_URL)');
        const found = await deps.archive.search({
          tenantId: principal.tenantId,
          ...(userId ? { userId } : {}),
          ...(q.q !== undefined ? { q: q.q } : {}),
          ...(q.agent ? { agent: q.agent } : {}),
          ...(q.status ? { status: q.status } : {}),
          ...(q.from !== undefined ? { from: new Date(q.from).toISOString() } : {}),
          ...(q.to !== undefined ? { to: new Date(q.to).toISOString() } : {}),
          ...(q.cursor ? { cursor: q.cursor } : {}),
          limit: q.limit,
        });
        return {
          runs: found.runs.map((r) => runView(r, [])),
          ...(found.nextCursor ? { nextCursor: found.nextCursor } : {}),
          finishedOnly: true as const,
        };
      }
      const { runs, next } = await deps.store.list(
        principal.tenantId,
        { status: q.status, agent: q.agent, userId },
        { limit: q.limit, after: q.createdAfter, before: q.createdBefore, cursor: q.cursor ? decodeCursor(q.cursor) : undefined },
        (ids) => runsById(principal.tenantId, ids),
      );
      return { runs: await Promise.all(runs.map(view)), ...(next ? { nextCursor: encodeCursor(next) } : {}) };
    },

    /** The tenant's usage from the archive (admins and approvers): runs created in [from, to), summed by one key. */
    async usage(principal: Principal, q: UsageQuery): Promise<UsageResponse> {
      if (!overseesTenant(principal)) throw new ForbiddenError('usage is readable by approvers and admins');
      if (!deps.archive) throw new ConflictError('archive_unavailable', 'usage needs the run archive (REIN_ARCHIVE_URL)');
      // A bound left out is chosen here, and the answer says which: the last USAGE_DEFAULT_DAYS up to now.
      const to = q.to ?? new Date(now()).toISOString();
      const from = q.from ?? new Date(Date.parse(to) - USAGE_DEFAULT_DAYS * 86_400_000).toISOString();
      const defaulted = (['from', 'to'] as const).filter((bound) => q[bound] === undefined);
      const rows = await deps.archive.usage({ tenantId: principal.tenantId, from, to, groupBy: q.groupBy });
      return { from, to, groupBy: q.groupBy, ...(defaulted.length ? { defaulted } : {}), rows };
    },

    /** The caller's own session: its runs, oldest first (sessions are per tenant and user). */
    async session(principal: Principal, sessionId: string) {
      const ids = await deps.sessionRegistry.sessionRunIds(principal.tenantId, principal.userId, sessionId);
      const runs = (await runsById(principal.tenantId, ids)).filter((r): r is RunRecord => r !== null);
      if (runs.length === 0) throw new NotFoundError(`session ${sessionId}`);
      return { id: sessionId, runs: await Promise.all(runs.map(view)) };
    },

    /**
     * A copy of the caller's session under a new id: the same runs, so a run in the copy
     * continues from the same history while the original goes on apart. A session with a run
     * still active is not copied (409 `session_busy`): its history is not settled yet.
     */
    async copySession(principal: Principal, from: string, to: string) {
      const { runs } = await service.session(principal, from);
      const live = runs.find((r) => !TERMINAL_STATUSES.includes(r.status));
      if (live)
        throw new ConflictError('session_busy', `session ${from} has run ${live.id} still ${live.status}: copy it once it has ended`);
      if (!(await deps.sessionRegistry.copySession(principal.tenantId, principal.userId, from, to)))
        throw new ConflictError('session_exists', `session ${to} already has runs`);
      return service.session(principal, to);
    },

    /** The run record as the caller may read it (404 otherwise): what replays and forks start from. */
    record: visibleRun,

    /** Cancels a non-terminal run; its pending approvals are withdrawn in the same commit. */
    async cancel(principal: Principal, id: string) {
      return view(await end(principal, id));
    },
  };
  return service;
}

export type RunService = ReturnType<typeof createRunService>;
