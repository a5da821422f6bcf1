import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { type Enqueue, jobRoute } from '../../adapters/queue/job-catalog.js';
import { approvalEvent } from '../../adapters/redis/approval-feed.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import { cancelRun, retryOnStale } from '../../policy/run/run-transitions.js';
import type { Logger } from '../../shared/logger.js';
import type { TransitionApplier } from '../../step/apply-transition.js';
import type { RunEndPlug } from '../run-end.js';

export interface RunTreeDeps {
  store: RunRepository;
  applier: Pick<TransitionApplier, 'apply'>;
  enqueue: Enqueue;
  logger: Logger;
  now?: () => number;
}

/**
 * What a run's end does to its tree, as a finish hook (idempotent: the reaper may run it
 * again): a child's end wakes its parent's waiting step (the step decides whether every
 * child ended), and any run's end cancels its descendants that are still live — a parent
 * that failed, was cancelled or expired leaves no child working for nobody.
 */
export function createRunTree(deps: RunTreeDeps) {
  const now = deps.now ?? Date.now;

  /** Cancels one live child, and through its own finish hook its descendants. */
  async function cancelChild(childId: string, by: string): Promise<void> {
    await retryOnStale(async () => {
      const child = await deps.store.get(childId);
      if (!child || TERMINAL_STATUSES.includes(child.status)) return;
      const { change, withdrawn } = cancelRun(child, await deps.store.approvals(childId), by, new Date(now()).toISOString());
      await deps.applier.apply(child, { kind: 'cancel', change, followUps: { feed: withdrawn.map((a) => approvalEvent(a, true)) } });
    });
  }

  async function finished(run: RunRecord): Promise<void> {
    if (run.parentRunId && run.parentStep !== undefined) {
      // A step of the parent's: routed to its version's workers (read, as an upgrade may have moved the parent off the child's).
      const parent = await deps.store.get(run.parentRunId);
      const wake = { runId: run.parentRunId, step: run.parentStep, tenantId: run.tenantId, child: run.id };
      await deps.enqueue('wake', wake, { route: jobRoute(parent ?? run) });
    }
    for (const child of await deps.store.children(run.id)) {
      try {
        await cancelChild(child.id, `run:${run.id}`);
      } catch (err) {
        // The child's own steps see the ended ancestor and cancel it (step-processor.ts); the reaper runs this hook again.
        deps.logger.warn({ runId: run.id, childRunId: child.id, err: (err as Error).message }, 'could not cancel a sub-agent run');
      }
    }
  }

  return { finished };
}

export type RunTree = ReturnType<typeof createRunTree>;

/** A finished run's children end with it; a finished child wakes its waiting parent. */
export const treePlug = (tree: Pick<RunTree, 'finished'>): RunEndPlug => ({ feature: 'tree', finished: (run) => tree.finished(run) });
