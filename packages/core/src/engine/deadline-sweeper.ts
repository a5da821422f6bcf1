import type { RunStore } from '../store/run-store.js';
import type { StepProcessor } from './step-processor.js';

/**
 * Fails runs whose deadline passed, even when no worker is looking at them (their job
 * was lost, or backs off for a long time). Parked runs are not in the index: their
 * approvals' expiry governs them, and parked time does not count against the deadline.
 */
export async function sweepDeadlines(deps: { store: RunStore; steps: StepProcessor; now?: () => number }): Promise<number> {
  const now = deps.now ?? Date.now;
  let failed = 0;
  for (const runId of await deps.store.overdue(now())) {
    const ended = await deps.steps.fail(
      runId,
      await deps.steps.deadlineReason(runId),
      'the deadline sweeper found the run past its deadline',
      (run) => run.status !== 'pending_approval' && now() >= Date.parse(run.deadlineAt),
    );
    if (ended) failed++;
    else {
      const run = await deps.store.get(runId);
      // Gone, finished or parked: drop it. A moved deadline was re-indexed by its commit.
      if (!run || run.status === 'pending_approval' || ['succeeded', 'failed', 'cancelled'].includes(run.status))
        await deps.store.forgetDeadline(runId);
    }
  }
  return failed;
}
