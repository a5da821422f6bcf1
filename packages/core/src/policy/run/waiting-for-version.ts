import type { Approval, Compensation, RunRecord, RunView } from '@rein/contract';

/** The workers of one app version as the fleet's directory sees them. */
export interface VersionWorkers {
  workers: number;
  /** When a worker of the version last beat (ms); undefined: never. */
  lastWorkerAt?: number;
}

type WaitingRun = Pick<RunRecord, 'status' | 'updatedAt' | 'queuedBehind' | 'pendingApprovals'>;
type Saga = Pick<Compensation, 'status' | 'updatedAt'> | undefined;

/**
 * Whether a job of the run waits on a queue (pure): a queued or running run's step, a parked
 * run's resume once none of its approvals is pending (as the version directory counts it), or a saga's undo jobs. A run queued behind
 * its session, waiting on children or on a person has no job yet.
 */
export function awaitsJob(run: WaitingRun, approvals: readonly Pick<Approval, 'id' | 'status'>[], compensation: Saga): boolean {
  const stepping = (run.status === 'queued' || run.status === 'running') && !run.queuedBehind;
  // A decision takes the approval off the run's list: parked with none pending is a resume on the queue.
  const resuming =
    run.status === 'pending_approval' && run.pendingApprovals.every((id) => approvals.some((a) => a.id === id && a.status !== 'pending'));
  return stepping || resuming || compensation?.status === 'running';
}

/**
 * For a run that awaits a job on `version`'s queues (where routing sends it, upgrades
 * followed): waiting for that version when no worker of it is alive (pure). `since` is the
 * later of the run's (or its saga's) last change and the last sighting of such a worker.
 */
export function waitingForVersion(
  run: WaitingRun,
  compensation: Saga,
  version: string,
  seen: VersionWorkers,
): RunView['waitingForVersion'] {
  if (seen.workers > 0) return undefined;
  const changed = Math.max(Date.parse(run.updatedAt), compensation?.status === 'running' ? Date.parse(compensation.updatedAt) : 0);
  return { version, since: new Date(Math.max(changed, seen.lastWorkerAt ?? 0)).toISOString() };
}
