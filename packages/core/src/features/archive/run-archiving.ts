import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { isArchiveUnavailable } from '../../adapters/postgres/archive-pool.js';
import { isUnstorable, type RunArchive } from '../../adapters/postgres/run-archive.js';
import { archiveJobSchema, type Enqueue, jobRoute } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import { type HotRuns, type RunSnapshot, sameRevision } from '../../adapters/redis/hot-runs.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { RunEndPlug } from '../run-end.js';

export interface RunArchivingDeps {
  hot: HotRuns;
  archive: RunArchive;
  enqueue: Enqueue;
  metrics: Metrics;
  logger: Logger;
  /** REIN_HOT_RETENTION_MS: how long an archived run's keys stay in Redis after its finish. */
  hotRetentionMs: number;
  /** REIN_ARCHIVE_RETENTION_DAYS: archived runs older than this are deleted; undefined: kept. */
  retentionDays?: number | undefined;
  /** A backlog entry younger than this is left to the job its finish enqueued (REIN_REAPER_STALE_MS). */
  staleMs: number;
  now?: () => number;
}

/** How many runs one pass looks at per set, and how many archived runs its retention deletes. */
const PASS_LIMIT = 500;
const RETENTION_BATCH = 1_000;

/**
 * Whether a finished run's keys may leave Redis: nothing of it may still change there —
 * no approval waiting (a saga's plan), no compensation waiting, running or failed (an
 * approver may retry a failed one, which needs the run's keys). Such a run stays hot
 * until its trace TTL; the archive has it all the same.
 */
export function retirable(s: Pick<RunSnapshot, 'run' | 'approvals' | 'compensation'>): boolean {
  if (!TERMINAL_STATUSES.includes(s.run.status)) return false;
  if (s.approvals.some((a) => a.status === 'pending')) return false;
  return !s.compensation || s.compensation.status === 'done' || s.compensation.status === 'declined';
}

/**
 * Moving what ran to PostgreSQL: the finish hook (the run joins the backlog, its archive
 * job is enqueued), the job (an idempotent write of the run's current revision, then the
 * run's hash says `archivedAt`; a document the archive refuses becomes a dead letter), and
 * the reaper's pass (re-enqueues what the backlog still holds as soon as the archive
 * answers, drops the keys of runs archived more than REIN_HOT_RETENTION_MS ago once the
 * archive confirms the very revision Redis holds, deletes by REIN_ARCHIVE_RETENTION_DAYS).
 */
export function createRunArchiving(deps: RunArchivingDeps) {
  const now = deps.now ?? Date.now;

  return {
    /** The finish hook (run again for changes after the finish): idempotent. */
    async finished(run: RunRecord): Promise<void> {
      await deps.hot.pending(run);
      // To the run's version's workers, which ran it; the reaper's re-enqueues go to its own (any version's worker archives).
      await deps.enqueue('archive', { runId: run.id, traceparent: run.traceparent }, { route: jobRoute(run) });
    },

    /**
     * The archive job. While PostgreSQL cannot be reached it ends at once, the run left in
     * the backlog: the reaper's first pass that finds the archive answering enqueues it
     * again (a job backing off would wait out its own delay instead). A document the
     * archive refuses is stored as a dead letter, and only then leaves the backlog. Any
     * other failure throws: the job retries with backoff.
     */
    async archive(runId: string): Promise<string> {
      const snapshot = await deps.hot.snapshot(runId);
      if (!snapshot) {
        await deps.hot.forget(runId); // expired or dropped: nothing left to write
        return 'gone';
      }
      if (!TERMINAL_STATUSES.includes(snapshot.run.status)) return 'not finished';
      let wrote: boolean;
      try {
        wrote = await deps.archive.archiveRun(snapshot);
      } catch (err) {
        if (isUnstorable(err)) {
          await deps.archive.deadLetter(snapshot, err); // throws (the job retries) if even this cannot be stored
          await deps.hot.deadLettered(runId);
          deps.metrics.archiveDeadLetters.inc();
          deps.logger.error({ runId, err: (err as Error).message }, 'the archive refused a run: kept in rein.dead_letters');
          return 'dead letter';
        }
        deps.metrics.archiveErrors.inc({ operation: 'write' });
        if (isArchiveUnavailable(err)) {
          deps.logger.warn({ runId, err: (err as Error).message }, 'could not reach the archive; the run waits in the backlog');
          return 'archive unavailable';
        }
        deps.logger.warn({ runId, err: (err as Error).message }, 'could not archive a run; will retry');
        throw err;
      }
      // Only now, with the write confirmed, does the run count as archived.
      await deps.hot.archived(snapshot.run, snapshot.revision);
      const result = wrote ? 'written' : 'unchanged';
      deps.metrics.archiveWrites.inc({ result });
      return result;
    },

    /** The reaper's pass over the archive's sets; returns how many runs' keys it dropped. */
    async sweep(): Promise<number> {
      const at = now();
      const backlog = await deps.hot.backlog(at - deps.staleMs, PASS_LIMIT);
      // Only when the archive answers: jobs enqueued into an outage would only end at once again.
      if (backlog.length && (await deps.archive.reachable())) {
        for (const runId of backlog) await deps.enqueue('archive', { runId }); // a no-op while its job is waiting or running
      }
      let dropped = 0;
      for (const runId of await deps.hot.due(at - deps.hotRetentionMs, PASS_LIMIT)) {
        const snapshot = await deps.hot.snapshot(runId);
        if (!snapshot) {
          await deps.hot.forget(runId);
          continue;
        }
        if (!retirable(snapshot)) {
          await deps.hot.postpone(runId, at); // looked at again one hot retention later
          continue;
        }
        let held: number[] | null;
        try {
          held = await deps.archive.revision(snapshot.run.tenantId, runId);
        } catch (err) {
          // PostgreSQL down or slow: keep every key, try again on the next pass.
          deps.metrics.archiveErrors.inc({ operation: 'retire' });
          deps.logger.warn({ err: (err as Error).message }, 'could not confirm archived runs; their keys stay in Redis');
          break;
        }
        if (held && sameRevision(held, snapshot.revision)) {
          if (await deps.hot.drop(runId, snapshot.events.at(-1)?.id)) {
            dropped++;
            deps.metrics.archiveRetired.inc({ where: 'redis' });
          }
          continue;
        }
        // The archive lacks what Redis holds (a change after the write): archive it again first.
        await deps.hot.unconfirmed(snapshot.run);
        await deps.enqueue('archive', { runId });
      }
      if (deps.retentionDays !== undefined) {
        try {
          const deleted = await deps.archive.deleteOlderThan(new Date(at - deps.retentionDays * 86_400_000), RETENTION_BATCH);
          if (deleted) deps.metrics.archiveRetired.inc({ where: 'archive' }, deleted);
        } catch (err) {
          deps.metrics.archiveErrors.inc({ operation: 'retention' });
          deps.logger.warn({ err: (err as Error).message }, 'the archive retention could not delete old runs');
        }
      }
      return dropped;
    },
  };
}

export type RunArchiving = ReturnType<typeof createRunArchiving>;

/** A finished run joins the archive's backlog and its archive job is enqueued. */
export const archivePlug = (archiving: Pick<RunArchiving, 'finished'>): RunEndPlug => ({
  feature: 'archive',
  finished: (run) => archiving.finished(run),
});

/** A finished run's archiving. With the archive off, a job left by a fleet that had it on has nothing to write to: the run stays in Redis until its TTL. */
export const archiveJobs = (archiving: Pick<RunArchiving, 'archive'> | undefined): JobHandlers<'archive'> => ({
  archive: { schema: archiveJobSchema, run: async ({ runId }) => (archiving ? archiving.archive(runId) : 'no archive') },
});
