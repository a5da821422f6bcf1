import { TERMINAL_STATUSES } from '@rein/contract';
import { DEADLINE_SWEEP, housekeepingJobSchema } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import { isParked } from '../../policy/run/run-settled.js';
import type { Logger } from '../../shared/logger.js';
import type { StepProcessor } from '../../step/step-processor.js';

export interface SweeperDeps {
  store: RunRepository;
  steps: Pick<StepProcessor, 'fail' | 'deadlineReason'>;
  logger: Logger;
  now?: () => number;
}

/**
 * Fails runs whose deadline passed, even when no worker is looking at them (their job
 * was lost, or backs off for a long time). Parked runs are not in the index: their
 * approvals' expiry governs them, and parked time does not count against the deadline.
 * Neither do `waiting` runs: their children's deadlines (capped to the parent's) end them.
 */
export async function sweepDeadlines(deps: SweeperDeps): Promise<number> {
  const now = deps.now ?? Date.now;
  let failed = 0;
  for (const runId of await deps.store.overdue(now())) {
    // One run out of reach (its Redis master down) is left for the next pass; the others are not held up.
    try {
      if (await sweepOne(deps, runId, now)) failed++;
    } catch (err) {
      deps.logger.warn({ runId, err: (err as Error).message }, 'the deadline sweeper could not end a run');
    }
  }
  return failed;
}

async function sweepOne(deps: SweeperDeps, runId: string, now: () => number): Promise<boolean> {
  const ended = await deps.steps.fail(
    runId,
    await deps.steps.deadlineReason(runId),
    'the deadline sweeper found the run past its deadline',
    (run) => !isParked(run.status) && now() >= Date.parse(run.deadlineAt),
  );
  if (ended) return true;
  const run = await deps.store.get(runId);
  // Gone, finished or parked: drop it. A moved deadline was re-indexed by its commit.
  if (!run || isParked(run.status) || TERMINAL_STATUSES.includes(run.status)) await deps.store.forgetDeadline(runId);
  return false;
}

/** The sweep pass: fails the runs past their deadline. */
export const sweepJobs = (deps: SweeperDeps): JobHandlers<typeof DEADLINE_SWEEP.name> => ({
  [DEADLINE_SWEEP.name]: { schema: housekeepingJobSchema, run: async () => `failed ${await sweepDeadlines(deps)}` },
});
