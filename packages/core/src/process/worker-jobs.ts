import { jobRoute } from '../adapters/queue/job-catalog.js';
import type { Dequeued, JobTable } from '../adapters/queue/job-table.js';
import { approvalJobs } from '../features/approvals/approval-service.js';
import { archiveJobs } from '../features/archive/run-archiving.js';
import { auditJobs } from '../features/audit/audit-proof.js';
import { compensationJobs } from '../features/compensation/compensation.js';
import { sweepJobs } from '../features/housekeeping/deadline-sweeper.js';
import { reapJobs } from '../features/housekeeping/reaper.js';
import { fairShareJobs } from '../features/runs/fair-share.js';
import { sessionJobs } from '../features/runs/session-queue.js';
import { scheduleJobs } from '../features/schedules/schedule-service.js';
import { stepJobs } from '../step/step-jobs.js';
import type { StepProcessor } from '../step/step-processor.js';
import type { WorkerRuntime } from './runtime.js';

/**
 * Every job a worker takes, merged from the jobs each feature owns (the step engine's
 * steps, approvals' timers, compensation, archive, sessions, fair share, schedules,
 * housekeeping, audit checkpoints). The table is typed over every job name: a kind no
 * feature handles does not compile.
 */
export function workerJobs(rt: WorkerRuntime, steps: StepProcessor): JobTable<Dequeued> {
  const { store, metrics, logger, options } = rt;
  return {
    ...stepJobs({ steps, store, metrics, logger, version: rt.version }),
    ...approvalJobs(rt.approvals),
    ...compensationJobs(rt.compensator),
    ...archiveJobs(rt.archive?.archiving),
    ...fairShareJobs(rt.fairShare),
    ...sessionJobs(rt.sessionQueue),
    ...scheduleJobs(rt.schedules),
    ...sweepJobs({ store, steps, logger }),
    ...reapJobs(
      {
        store,
        queueOf: (run) => rt.scheduler.queueFor(run.id, jobRoute(run)),
        enqueue: rt.enqueue,
        approvals: rt.approvals,
        feed: rt.feed,
        applier: rt.applier,
        metrics,
        logger,
        quotas: rt.quotas,
        staleMs: options.maintenance.reaperStaleMs,
      },
      rt.archive?.archiving,
    ),
    ...auditJobs(rt.audit, metrics, Boolean(rt.archive || options.audit.checkpointSink)),
  };
}
