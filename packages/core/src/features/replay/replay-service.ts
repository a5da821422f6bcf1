import { randomUUID } from 'node:crypto';
import type { ChatMessage, Principal } from '@rein/contract';
import { type ForkRunBody, type ReplayRunBody, type ReplayStarted, type RunDiff, type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { type Enqueue, jobRoute } from '../../adapters/queue/job-catalog.js';
import type { TenantQuotas } from '../../adapters/redis/tenant-quotas.js';
import { newTraceparent } from '../../adapters/tracing/trace-context.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { diffRuns } from '../../policy/run/run-diff.js';
import { runEvent } from '../../policy/run/run-event.js';
import { ConflictError, ForbiddenError, InvalidRequestError } from '../../shared/errors.js';
import type { Metrics } from '../../shared/metrics.js';
import { queuedRun } from '../runs/queued-run.js';
import type { LimitCeilings } from '../runs/run-service.js';

export interface ReplayServiceDeps {
  store: RunRepository & TurnJournal;
  quotas: TenantQuotas;
  enqueue: Enqueue;
  metrics: Metrics;
  /**
   * The models a replay may name: those the fleet calls or prices (budgets/cost.ts). Any other
   * would reach a provider the operator never chose, at no price, so no cost budget stops it.
   */
  knownModel: (model: string) => boolean;
  /** What a new run may ask for: a fork gets no more, whatever raises its original was granted. */
  ceilings: LimitCeilings;
  /** The run as the caller may read it (404 otherwise): run-service.ts `record`. */
  visibleRun: (principal: Principal, id: string) => Promise<RunRecord>;
  /** The app version new runs are pinned to. */
  currentVersion?: () => string;
  /** How many workers of an app version are alive: a replay on a version none runs would wait for ever. */
  liveWorkers?: (version: string) => Promise<number>;
  now?: () => number;
}

/** Creates the derived run (admitted under the tenant's quota like any run) and enqueues its first step. */
async function startDerived(
  deps: ReplayServiceDeps,
  original: RunRecord,
  patch: Partial<RunRecord>,
  history: ChatMessage[],
): Promise<RunRecord> {
  const id = randomUUID();
  const traceparent = newTraceparent();
  const at = (deps.now ?? Date.now)();
  const run = queuedRun(
    {
      id,
      traceparent,
      tenantId: original.tenantId,
      userId: original.userId,
      roles: original.roles,
      agent: original.agent,
      ...(deps.currentVersion ? { appVersion: deps.currentVersion() } : {}),
      input: original.input,
      metadata: original.metadata,
      limits: original.limits,
      ...patch,
    },
    at,
  );
  const admission = await deps.quotas.admit(run.tenantId, id);
  try {
    const event = runEvent('run.queued', id, 0, {
      agent: run.agent,
      traceId: run.traceId,
      ...(run.appVersion ? { appVersion: run.appVersion } : {}),
    });
    await deps.store.create(run, null, event, history);
  } catch (err) {
    await deps.quotas.release(run.tenantId, id).catch(() => {});
    throw err;
  }
  if (admission !== 'admitted') {
    // Into its line only now that its record exists (see TenantQuotas.admit).
    await deps.quotas.wait(run.tenantId, id, admission);
    await deps.enqueue('slot', { runId: id, tenantId: run.tenantId, freed: false, traceparent });
  } else await deps.enqueue('step', { runId: id, step: 0, traceparent, tenantId: run.tenantId }, { route: jobRoute(run) });
  deps.metrics.runsSubmitted.inc({ agent: run.agent });
  return run;
}

/**
 * Replays and forks of a run the caller may read, and the diff of a replay. A replay is a
 * new run of the same agent, input and session history (never its session: it has none),
 * whose tool calls the engine answers from the original's records (engine/replay-policy.ts);
 * a fork is a new live run whose history is the original's up to a step.
 */
export function createReplayService(deps: ReplayServiceDeps) {
  /** The original, finished and still in Redis (its records are what a replay is answered from). */
  async function finishedOriginal(principal: Principal, id: string): Promise<RunRecord> {
    const original = await deps.visibleRun(principal, id);
    if (!TERMINAL_STATUSES.includes(original.status))
      throw new ConflictError('run_not_finished', `run ${id} is ${original.status}: only finished runs are replayed or forked`);
    if (!(await deps.store.get(id)))
      throw new ConflictError('original_unavailable', `run ${id} is archived: its records are no longer where a replay reads them`);
    return original;
  }

  /** 400 `unknown_model` for a model the fleet neither calls nor prices (a cohort checks before it samples). */
  function checkModel(model: string | undefined): void {
    if (model !== undefined && !deps.knownModel(model))
      throw new InvalidRequestError(`model ${model} is not one this fleet calls or prices (REIN_MODEL_PRICES)`, 'unknown_model');
  }

  /** 409 `version_not_live` for an app version no worker runs: its replays would wait for ever. */
  async function checkVersion(version: string | undefined): Promise<void> {
    if (version && deps.liveWorkers && (await deps.liveWorkers(version)) === 0)
      throw new ConflictError('version_not_live', `no worker of app version ${version} is alive to run the replay`);
  }

  return {
    checkModel,
    checkVersion,

    /** `POST /v1/runs/:id/replay`. */
    async replay(principal: Principal, id: string, body: ReplayRunBody, opts: { cohortId?: string } = {}): Promise<ReplayStarted> {
      checkModel(body.model);
      const original = await finishedOriginal(principal, id);
      if (original.mode === 'replay') throw new ConflictError('not_a_replay', `run ${id} is itself a replay: replay its original`);
      // A live read runs as the original's owner, with their roles: nobody else may have tools run as them.
      if (body.liveReads && original.userId !== principal.userId)
        throw new ForbiddenError(`liveReads runs tools as ${original.userId}: only they may replay run ${id} with it`);
      // A plan's approval cannot be answered from the records yet, and a replay asks nobody for one.
      if (original.plan) throw new ConflictError('replay_unsupported', `run ${id} followed a plan: plan-mode runs are not replayed yet`);
      await checkVersion(body.version);
      // What the original's first model call saw: its session's earlier turns, then its input.
      const history = (await deps.store.messages(id)).slice(0, (original.historyMessages ?? 0) + 1);
      const run = await startDerived(
        deps,
        original,
        {
          mode: 'replay',
          replayOf: id,
          replay: {
            ...(body.model ? { model: body.model } : {}),
            ...(body.instructions ? { instructions: body.instructions } : {}),
            liveReads: body.liveReads ?? false,
            onNewApproval: body.onNewApproval ?? 'reject',
          },
          ...(body.version ? { appVersion: body.version } : {}),
          ...(opts.cohortId ? { cohortId: opts.cohortId } : {}),
        },
        history,
      );
      return { id: run.id, replayOf: id, status: run.status };
    },

    /** `POST /v1/runs/:id/fork`: a live run from the original's history before step `fromStep`. */
    async fork(principal: Principal, id: string, body: ForkRunBody): Promise<ReplayStarted> {
      const original = await finishedOriginal(principal, id);
      // A replay's history holds simulated writes and unrecorded reads: a live run must not take them for facts.
      if (original.mode === 'replay') throw new ConflictError('not_a_replay', `run ${id} is a replay: fork its original`);
      const [messages, steps] = await Promise.all([deps.store.messages(id), deps.store.steps(id)]);
      if (body.fromStep > steps.length)
        throw new ConflictError('fork_step_unavailable', `run ${id} has ${steps.length} steps: fork from step 0 to ${steps.length}`);
      // Each committed step added its reply and one result per call; what precedes is the session's turns and the input.
      let end = (original.historyMessages ?? 0) + 1;
      for (const s of steps.slice(0, body.fromStep)) end += 1 + s.toolCalls.length;
      const next = messages[end];
      if (end > messages.length || (next && next.role !== 'assistant' && body.fromStep < steps.length))
        throw new ConflictError('fork_step_unavailable', `the message history of run ${id} cannot be cut before step ${body.fromStep}`);
      const history = messages.slice(0, end);
      const input = body.input ? [{ role: 'user' as const, content: body.input }] : [];
      const run = await startDerived(
        deps,
        original,
        {
          forkOf: id,
          forkStep: body.fromStep,
          // A granted budget raise was for the original (approved raises may pass the ceilings): a fork starts within them.
          limits: {
            ...original.limits,
            maxSteps: Math.min(original.limits.maxSteps, deps.ceilings.maxSteps),
            maxTokens: Math.min(original.limits.maxTokens, deps.ceilings.maxTokens),
            timeoutMs: Math.min(original.limits.timeoutMs, deps.ceilings.timeoutMs),
          },
          // A fork is live: it runs as whoever forks, with their roles now, never as the original's owner.
          userId: principal.userId,
          roles: principal.roles,
          // What precedes its input (its last message, without one): a replay or fork of it starts from all it saw.
          ...(body.input ? { input: body.input, historyMessages: end } : { historyMessages: end - 1 }),
        },
        [...history, ...input],
      );
      return { id: run.id, forkOf: id, status: run.status };
    },

    /** `GET /v1/runs/:id/diff` of a replay. */
    async diff(principal: Principal, id: string): Promise<RunDiff> {
      const replay = await deps.visibleRun(principal, id);
      if (replay.mode !== 'replay' || !replay.replayOf) throw new ConflictError('not_a_replay', `run ${id} is not a replay`);
      const original = await deps.visibleRun(principal, replay.replayOf);
      const [os, rs, approvals] = await Promise.all([
        deps.store.steps(original.id),
        deps.store.steps(id),
        deps.store.approvals(original.id),
      ]);
      return diffRuns({ run: original, steps: os }, { run: replay, steps: rs }, approvals);
    },
  };
}

export type ReplayService = ReturnType<typeof createReplayService>;
