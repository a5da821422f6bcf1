import type { Queue } from 'bullmq';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { Metrics } from '../metrics.js';
import { type Enqueue, jobCatalog } from '../queue/job-catalog.js';
import { type RunRecord, TERMINAL_STATUSES } from '../schemas/run.js';
import type { RunStore } from '../store/run-store.js';

export interface ReaperDeps {
  store: RunStore;
  queue: Queue;
  enqueue: Enqueue;
  approvals: ApprovalService;
  metrics: Metrics;
  /** A run unchanged for less than this is left alone (its job may simply be running). */
  staleMs: number;
  now?: () => number;
}

const LIVE_JOB_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

async function jobIsLive(queue: Queue, id: string): Promise<boolean> {
  const job = await queue.getJob(id);
  return job ? LIVE_JOB_STATES.has(await job.getState()) : false;
}

/**
 * Finds runs that no job will ever advance — running or queued with no live step job,
 * or parked with every approval decided and no live resume job, or with an approval
 * past its expiry that nobody expired — and repairs them, counting each repair. Also
 * exports how many runs are in each status and how long the oldest has waited.
 */
export async function reap(deps: ReaperDeps): Promise<number> {
  const now = deps.now ?? Date.now;
  const active = await deps.store.activeRuns();
  const counts = new Map<string, number>();
  const oldest = new Map<string, number>();
  let repaired = 0;
  let pendingApprovals = 0;
  for (const { runId, since } of active) {
    const run = await deps.store.get(runId);
    if (!run || TERMINAL_STATUSES.includes(run.status)) {
      await deps.store.forgetActive(runId);
      continue;
    }
    counts.set(run.status, (counts.get(run.status) ?? 0) + 1);
    pendingApprovals += run.pendingApprovals.length;
    oldest.set(run.status, Math.max(oldest.get(run.status) ?? 0, (now() - since) / 1000));
    if (now() - since < deps.staleMs) continue;
    const kind = await repairIfStuck(deps, run, now());
    if (kind) {
      deps.metrics.reaperRepairs.inc({ kind });
      repaired++;
    }
  }
  deps.metrics.approvalsPending.set(pendingApprovals);
  for (const status of ['queued', 'running', 'pending_approval']) {
    deps.metrics.runsInState.set({ status }, counts.get(status) ?? 0);
    deps.metrics.oldestInState.set({ status }, oldest.get(status) ?? 0);
  }
  return repaired;
}

async function repairIfStuck(deps: ReaperDeps, run: RunRecord, now: number): Promise<string | null> {
  const step = { runId: run.id, step: run.step };
  const repair = { ...step, version: run.version, traceparent: run.traceparent };
  if (await jobIsLive(deps.queue, jobCatalog.repair.id(repair))) return null;
  if (run.status === 'queued' || run.status === 'running') {
    if (await jobIsLive(deps.queue, jobCatalog.step.id(step))) return null;
    await deps.enqueue('repair', repair);
    return 'lost_step_job';
  }
  const ofStep = (await deps.store.approvals(run.id)).filter((a) => a.step === run.step);
  const pending = ofStep.filter((a) => a.status === 'pending');
  if (pending.some((a) => Date.parse(a.expiresAt) < now)) {
    return (await deps.approvals.expireDue(run.id, run.step)) > 0 ? 'missed_expiry' : null;
  }
  if (ofStep.length > 0 && pending.length === 0 && !(await jobIsLive(deps.queue, jobCatalog.resume.id(step)))) {
    await deps.enqueue('repair', repair);
    return 'lost_resume_job';
  }
  return null;
}
