import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import type { Queue } from 'bullmq';
import { type Enqueue, housekeepingJobSchema, jobCatalog, jobRoute, REAPER } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import type { ApprovalFeed } from '../../adapters/redis/approval-feed.js';
import type { TenantQuotas } from '../../adapters/redis/tenant-quotas.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { TransitionApplier } from '../../step/apply-transition.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { RunArchiving } from '../archive/run-archiving.js';

export interface ReaperDeps {
  store: RunRepository;
  /** The step-queue shard that holds a run's jobs. */
  /** The queue a run's next job is in: its shard's, for the version that runs it. */
  queueOf: (run: RunRecord) => Queue;
  enqueue: Enqueue;
  approvals: ApprovalService;
  /** Its outbox holds approval events a crash kept from being published. */
  feed: ApprovalFeed;
  /** Finishes what a crash cut short of a run's finish: charge, finish hooks, indexes. */
  applier: Pick<TransitionApplier, 'completeFinish'>;
  metrics: Metrics;
  logger: Logger;
  /** Fair share: whether a queued run waits for a slot of its tenant (then it has no step job on purpose); omitted, none does. */
  quotas?: Pick<TenantQuotas, 'waiting'>;
  /** A run unchanged for less than this is left alone (its job may simply be running). */
  staleMs: number;
  now?: () => number;
}

const LIVE_JOB_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Whether a job will still run: gone, live, or promoted. A delayed job whose time came
 * more than `staleMs` ago is not left to BullMQ: its promotion can be lost (seen on a
 * Redis Cluster after a master was killed, when the workers' wake-up went with it), so
 * it is promoted here. Promoting a job early is harmless: a step that must still wait
 * delays itself again.
 */
async function jobLife(queue: Queue, id: string, now: number, staleMs: number): Promise<'gone' | 'live' | 'promoted'> {
  const job = await queue.getJob(id);
  if (!job) return 'gone';
  const state = await job.getState();
  if (state === 'delayed') {
    // BullMQ scores a delayed job by its due time in ms × 0x1000 (plus a tie-breaking counter).
    const score = await (await queue.client).zscore(queue.keys.delayed as string, id);
    if (score !== null && Number(score) / 0x1000 + staleMs < now) {
      await job.promote();
      return 'promoted';
    }
  }
  return LIVE_JOB_STATES.has(state) ? 'live' : 'gone';
}

/**
 * Finds runs that no job will ever advance — running or queued with no live step job,
 * or parked with every approval decided (or waiting with every child ended) and no live resume job, or with an approval
 * past its expiry that nobody expired — and finished runs whose follow-ups a crash cut
 * short, and repairs them, counting each repair; publishes approval events a crash kept
 * in the feed's outbox. Also
 * exports how many runs are in each status and how long the oldest has waited.
 */
export async function reap(deps: ReaperDeps): Promise<number> {
  const now = deps.now ?? Date.now;
  const active = await deps.store.activeRuns();
  const tally: Tally = { counts: new Map(), oldest: new Map(), pendingApprovals: 0 };
  let repaired = 0;
  for (const { runId, since } of active) {
    // One run out of reach (its Redis master down) is left for the next pass; the others are not held up.
    try {
      if (await reapOne(deps, runId, since, now(), tally)) repaired++;
    } catch (err) {
      deps.logger.warn({ runId, err: (err as Error).message }, 'the reaper could not look at a run');
    }
  }
  // Approval events staged before a commit and never published (a crash in between): like a finish hook, done again.
  const announced = await deps.feed.redeliverDue(now() - deps.staleMs, (runId) => deps.store.approvals(runId));
  if (announced) deps.metrics.reaperRepairs.inc({ kind: 'unpublished_approval_event' }, announced);
  repaired += announced;
  deps.metrics.approvalsPending.set(tally.pendingApprovals);
  for (const status of ['queued', 'running', 'pending_approval', 'waiting']) {
    deps.metrics.runsInState.set({ status }, tally.counts.get(status) ?? 0);
    deps.metrics.oldestInState.set({ status }, tally.oldest.get(status) ?? 0);
  }
  return repaired;
}

/** What a pass counts for the gauges: runs and the oldest wait per status, approvals pending. */
interface Tally {
  counts: Map<string, number>;
  oldest: Map<string, number>;
  pendingApprovals: number;
}

/** One run of the pass; true when it was repaired. */
async function reapOne(deps: ReaperDeps, runId: string, since: number, now: number, tally: Tally): Promise<boolean> {
  const run = await deps.store.get(runId);
  if (!run) {
    await deps.store.forgetActive(runId); // expired or never created: nothing left to repair
    return false;
  }
  if (TERMINAL_STATUSES.includes(run.status)) {
    // Still indexed as active: the process that finished it may have died before its
    // follow-ups — the tenant's charge, the finish hook (webhook, compensation), the
    // indexes. Each is idempotent; charging again adds only what is missing. A run that
    // finished moments ago is left to the process still finishing it.
    if (now - Date.parse(run.updatedAt) < deps.staleMs) return false;
    await deps.applier.completeFinish(run);
    deps.metrics.reaperRepairs.inc({ kind: 'unfinished_finish' });
    return true;
  }
  tally.counts.set(run.status, (tally.counts.get(run.status) ?? 0) + 1);
  tally.pendingApprovals += run.pendingApprovals.length;
  // The index is written when a run changes status, not on every step: its document says
  // when it last moved. A run that moved since is re-scored, so the next pass (which
  // reads the oldest scores first) reaches the runs behind it.
  const changed = Date.parse(run.updatedAt);
  tally.oldest.set(run.status, Math.max(tally.oldest.get(run.status) ?? 0, (now - changed) / 1000));
  if (now - changed < deps.staleMs) {
    if (changed > since) await deps.store.touchActive(run);
    return false;
  }
  const kind = await repairIfStuck(deps, run, now);
  if (!kind) return false;
  deps.metrics.reaperRepairs.inc({ kind });
  return true;
}

async function repairIfStuck(deps: ReaperDeps, run: RunRecord, now: number): Promise<string | null> {
  const step = { runId: run.id, step: run.step };
  const repair = { ...step, version: run.version, traceparent: run.traceparent };
  const route = { route: jobRoute(run) };
  const queue = deps.queueOf(run);
  const life = (id: string) => jobLife(queue, id, now, deps.staleMs);
  const repairJob = await life(jobCatalog.repair.id(repair));
  if (repairJob !== 'gone') return repairJob === 'promoted' ? 'stranded_delayed_job' : null;
  // Queued behind its session: no step job until it is admitted. Waiting is not stuck (no repair
  // counted), but a lost admit job would be: look at its session again (idempotent).
  if (run.queuedBehind) {
    await deps.enqueue('admit', { runId: run.id, cause: 'queued' });
    return null;
  }
  if (run.status === 'queued' || run.status === 'running') {
    const stepJob = await life(jobCatalog.step.id(step));
    if (stepJob !== 'gone') return stepJob === 'promoted' ? 'stranded_delayed_job' : null;
    // Waiting for a slot of its tenant (fair share): not stuck, but a slot a parked run freed is handed out here.
    if (await deps.quotas?.waiting(run.tenantId, run.id)) {
      await deps.enqueue('slot', { runId: run.id, tenantId: run.tenantId, freed: false });
      return null;
    }
    await deps.enqueue('repair', repair, route);
    return 'lost_step_job';
  }
  if (run.status === 'waiting') {
    // Every child of the step ended (or is gone) and nothing resumes the step: its wake-up was lost.
    const children = await deps.store.getMany(run.pendingChildren ?? []);
    if (children.some((c) => c !== null && !TERMINAL_STATUSES.includes(c.status))) return null;
    const resumeJob = await life(jobCatalog.resume.id(step));
    if (resumeJob !== 'gone') return resumeJob === 'promoted' ? 'stranded_delayed_job' : null;
    await deps.enqueue('repair', repair, route);
    return 'lost_wake_job';
  }
  const ofStep = (await deps.store.approvals(run.id)).filter((a) => a.step === run.step);
  const pending = ofStep.filter((a) => a.status === 'pending');
  if (pending.some((a) => Date.parse(a.expiresAt) < now)) {
    return (await deps.approvals.expireDue(run.id, run.step)) > 0 ? 'missed_expiry' : null;
  }
  if (ofStep.length === 0 || pending.length > 0) return null;
  const resumeJob = await life(jobCatalog.resume.id(step));
  if (resumeJob === 'promoted') return 'stranded_delayed_job';
  if (resumeJob === 'live') return null;
  await deps.enqueue('repair', repair, route);
  return 'lost_resume_job';
}

/** The reaper's pass: repairs stuck runs, then (with the archive on) retires archived runs' hot keys. */
export const reapJobs = (deps: ReaperDeps, archiving: Pick<RunArchiving, 'sweep'> | undefined): JobHandlers<typeof REAPER.name> => ({
  [REAPER.name]: {
    schema: housekeepingJobSchema,
    run: async () => {
      const repaired = await reap(deps);
      const retired = archiving ? await archiving.sweep() : 0;
      return `repaired ${repaired}, retired ${retired}`;
    },
  },
});
