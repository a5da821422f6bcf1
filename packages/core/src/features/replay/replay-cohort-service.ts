import { randomUUID } from 'node:crypto';
import type { Principal } from '@rein/contract';
import { type CohortEntry, type CreateReplayCohortBody, type ReplayCohortView, type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { ReserveResult } from '../../adapters/redis/lua-scripts.js';
import type { CohortDoc, ReplayCohortStore } from '../../adapters/redis/replay-cohort-store.js';
import { overseesTenant } from '../../policy/approvals/decision-rights.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { diffRuns } from '../../policy/run/run-diff.js';
import { ConflictError, ForbiddenError, NotFoundError, ReinError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { RunEndPlug } from '../run-end.js';
import type { ReplayService } from './replay-service.js';

/** The most finished runs a cohort samples from (newest first within its window). */
const CANDIDATES_MAX = 5000;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_MAX_TOKENS = 1_000_000;

export interface ReplayCohortDeps {
  store: RunRepository & TurnJournal;
  cohorts: ReplayCohortStore;
  replays: Pick<ReplayService, 'replay' | 'checkModel' | 'checkVersion'>;
  /** Cohorts one tenant may run at once (REIN_REPLAY_COHORTS_PER_TENANT). */
  perTenant: number;
  /** A cohort none of whose replays finished for this long was lost (its process died): it stops counting. */
  staleAfterMs: number;
  logger: Logger;
  now?: () => number;
}

/** `limit` of `ids` spread evenly over them (all of them when there are fewer). */
export function sampleEvenly<T>(ids: readonly T[], limit: number): T[] {
  if (ids.length <= limit) return [...ids];
  return Array.from({ length: limit }, (_, i) => ids[Math.floor((i * ids.length) / limit)] as T);
}

/** A cohort as its callers see it: its progress, and its replays set against their originals. */
async function cohortView(deps: ReplayCohortDeps, doc: CohortDoc): Promise<ReplayCohortView> {
  const state = await deps.cohorts.state(doc.principal.tenantId, doc.id);
  const replayIds = doc.originals.map((o) => state.replays.get(o));
  const [originals, replays] = await Promise.all([
    deps.store.getMany(doc.originals),
    deps.store.getMany(replayIds.flatMap((id) => (id ? [id] : []))),
  ]);
  const replayById = new Map(replays.flatMap((r) => (r ? [[r.id, r] as const] : [])));
  const totals = { tokens: { original: 0, replay: 0 }, costUsd: { original: 0, replay: 0 } };
  const runs = await Promise.all(
    doc.originals.map(async (original, i): Promise<CohortEntry> => {
      const replayId = replayIds[i];
      if (state.skipped.has(original)) return { original, state: 'skipped' };
      if (!replayId) return { original, state: 'pending' };
      const replay = replayById.get(replayId);
      const orig = originals[i];
      if (!replay || !orig || !TERMINAL_STATUSES.includes(replay.status)) return { original, replay: replayId, state: 'running' };
      const [os, rs, approvals] = await Promise.all([
        deps.store.steps(original),
        deps.store.steps(replayId),
        deps.store.approvals(original),
      ]);
      const diff = diffRuns({ run: orig, steps: os }, { run: replay, steps: rs }, approvals);
      totals.tokens.original += orig.usage.totalTokens;
      totals.tokens.replay += replay.usage.totalTokens;
      totals.costUsd.original += orig.costUsd;
      totals.costUsd.replay += replay.costUsd;
      const at = diff.divergedAtStep === null ? undefined : diff.steps[diff.divergedAtStep];
      const names = (side: NonNullable<typeof at>['original']) => (side ? side.calls.map((c) => c.name).join(', ') || 'answer' : 'nothing');
      return {
        original,
        replay: replayId,
        state: 'done',
        identical: diff.identical,
        divergedAtStep: diff.divergedAtStep,
        ...(at ? { divergence: `step ${at.index}: ${names(at.original)} → ${names(at.replay)}` } : {}),
        wouldNeedApprovals: diff.approvals.wouldNeed.length,
        nowFails: orig.status === 'succeeded' && replay.status !== 'succeeded',
      };
    }),
  );
  const count = (f: (e: CohortEntry) => boolean) => runs.filter(f).length;
  const done = count((e) => e.state === 'done');
  const skipped = count((e) => e.state === 'skipped');
  return {
    id: doc.id,
    agent: doc.agent,
    status: done + skipped === runs.length ? 'finished' : 'running',
    createdAt: doc.createdAt,
    settings: doc.settings,
    summary: {
      total: runs.length,
      replayed: done,
      identical: count((e) => e.identical === true),
      diverged: count((e) => e.identical === false),
      skipped,
      wouldNeedApprovals: runs.reduce((n, e) => n + (e.wouldNeedApprovals ?? 0), 0),
      nowFail: count((e) => e.nowFails === true),
      ...totals,
    },
    runs,
  };
}

/**
 * Cohort replays, as a gate before a deploy: up to `limit` finished runs of an agent,
 * replayed at most `concurrency` at a time, at most `perTenant` cohorts of a tenant at once.
 * The cohort advances where its replays finish (the finish hook, in whichever process
 * finished one), so it survives any process; each replay holds its token limit from the
 * cohort's `maxTokens` while it runs, and the originals whose limit no longer fits are skipped.
 */
export function createReplayCohortService(deps: ReplayCohortDeps) {
  const now = deps.now ?? Date.now;

  /** Finished runs of the agent created in [since, until), oldest first, replays left out. */
  async function candidates(principal: Principal, body: CreateReplayCohortBody): Promise<string[]> {
    const found: RunRecord[] = [];
    const after = Date.parse(body.since);
    const before = body.until ? Date.parse(body.until) : now();
    let cursor: Parameters<RunRepository['list']>[2]['cursor'];
    do {
      const page = await deps.store.list(
        principal.tenantId,
        { status: body.status, agent: body.agent, userId: undefined },
        { limit: 200, after, before, cursor },
      );
      found.push(...page.runs.filter((r) => r.mode !== 'replay' && TERMINAL_STATUSES.includes(r.status)));
      cursor = page.next;
    } while (cursor && found.length < CANDIDATES_MAX);
    return found.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)).map((r) => r.id);
  }

  /**
   * Starts the cohort's next replays while it has a free slot and its budget holds their
   * token limits (each replay's limit is held from the cohort before it starts, so replays
   * running at once cannot spend past `maxTokens` together). An original whose limit does not
   * fit waits for a running replay to give back what it did not spend; when none runs, it and
   * every other that does not fit are skipped.
   */
  async function startNext(doc: CohortDoc): Promise<void> {
    const tenant = doc.principal.tenantId;
    for (;;) {
      const original = await deps.cohorts.takeNext(tenant, doc.id);
      if (!original) return;
      const record = await deps.store.get(original);
      // Gone from Redis (archived meanwhile): it cannot be replayed.
      if (!record) {
        await deps.cohorts.skip(tenant, doc.id, original);
        continue;
      }
      // A replay runs with its original's limits: that is what it may spend.
      const held = record.limits.maxTokens;
      const reserved = await deps.cohorts.reserve(doc, held);
      if (reserved === ReserveResult.NoSlot || reserved === ReserveResult.WaitForRelease) {
        await deps.cohorts.putBack(tenant, doc.id, original);
        return;
      }
      if (reserved === ReserveResult.NeverFits) {
        await deps.cohorts.skip(tenant, doc.id, original);
        continue;
      }
      try {
        const { id } = await deps.replays.replay(doc.principal, original, doc.settings, { cohortId: doc.id });
        await deps.cohorts.started(tenant, doc.id, original, id, held);
      } catch (err) {
        await deps.cohorts.release(tenant, doc.id, held);
        if (!(err instanceof ReinError) || err.retryable) {
          await deps.cohorts.putBack(tenant, doc.id, original);
          throw err;
        }
        // An original that cannot be replayed (archived meanwhile, say) is skipped; the next one goes.
        deps.logger.warn({ cohortId: doc.id, original, code: err.code }, 'cohort original skipped');
        await deps.cohorts.skip(tenant, doc.id, original);
      }
    }
  }

  return {
    /** `POST /v1/replays` (approvers and admins of the tenant). */
    async create(principal: Principal, body: CreateReplayCohortBody): Promise<ReplayCohortView> {
      if (!overseesTenant(principal)) throw new ForbiddenError('cohort replays need the approver role or above');
      // Refused here, not replay by replay (each would only be skipped, and the cohort read as empty).
      deps.replays.checkModel(body.model);
      await deps.replays.checkVersion(body.version);
      const settings = {
        ...(body.model ? { model: body.model } : {}),
        ...(body.instructions ? { instructions: body.instructions } : {}),
        ...(body.version ? { version: body.version } : {}),
      };
      const doc: CohortDoc = {
        schemaVersion: 1,
        id: randomUUID(),
        principal,
        agent: body.agent,
        settings,
        originals: sampleEvenly(await candidates(principal, body), body.limit),
        concurrency: body.concurrency ?? DEFAULT_CONCURRENCY,
        maxTokens: body.maxTokens ?? DEFAULT_MAX_TOKENS,
        createdAt: new Date(now()).toISOString(),
      };
      if (!(await deps.cohorts.open(doc, deps.perTenant, deps.staleAfterMs, now())))
        throw new ConflictError(
          'too_many_cohorts',
          `tenant ${principal.tenantId} already runs ${deps.perTenant} cohort replays (REIN_REPLAY_COHORTS_PER_TENANT); wait for one to finish`,
        );
      await deps.cohorts.create(doc);
      await startNext(doc);
      await deps.cohorts.closeIfDone(principal.tenantId, doc.id);
      return cohortView(deps, doc);
    },

    /** `GET /v1/replays/:id`: progress and summary (404 across tenants, like a run). */
    async get(principal: Principal, id: string): Promise<ReplayCohortView> {
      if (!overseesTenant(principal)) throw new ForbiddenError('cohort replays need the approver role or above');
      const doc = await deps.cohorts.get(principal.tenantId, id);
      if (!doc) throw new NotFoundError(`cohort replay ${id}`);
      return cohortView(deps, doc);
    },

    /** A replay of a cohort finished: counted once, it frees its slot and what it did not spend for the next ones. */
    async replayFinished(run: RunRecord): Promise<void> {
      if (!run.cohortId) return;
      const doc = await deps.cohorts.get(run.tenantId, run.cohortId);
      if (!doc) return;
      await deps.cohorts.finished(run.tenantId, doc.id, run.id, run.usage.totalTokens);
      await deps.cohorts.touch(run.tenantId, doc.id, now());
      // Every time the hook runs, counted or not: a crash after the count must not leave the slot it freed empty.
      await startNext(doc);
      await deps.cohorts.closeIfDone(run.tenantId, doc.id);
    },
  };
}

export type ReplayCohortService = ReturnType<typeof createReplayCohortService>;

/** A cohort's replay that ends starts the cohort's next one. */
export const cohortPlug = (cohorts: Pick<ReplayCohortService, 'replayFinished'>): RunEndPlug => ({
  feature: 'replay',
  async finished(run) {
    if (run.mode === 'replay') await cohorts.replayFinished(run);
  },
});
