import { type RunStatus, type RunView, TERMINAL_STATUSES } from '@rein/contract';

/** Parked for approvals or waiting for children: out of the deadline index, counted as parked by quotas. */
export const isParked = (status: RunStatus) => status === 'pending_approval' || status === 'waiting';

/**
 * Whether a run waits on a person now. A decision keeps the status `pending_approval` until
 * the resume job takes the step, so the status alone would call a just-approved run parked.
 */
export const awaitsDecision = (run: Pick<RunView, 'status' | 'pendingApprovals'>): boolean =>
  run.status === 'pending_approval' && run.pendingApprovals.some((a) => a.status === 'pending');

/** Whether a run has got where a blocking caller answers: finished, or parked on approvals someone must decide. */
export const isSettled = (run: Pick<RunView, 'status' | 'pendingApprovals'>): boolean =>
  TERMINAL_STATUSES.includes(run.status) || awaitsDecision(run);
