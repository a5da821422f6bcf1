import type { TenantQuotas } from '../budgets/tenant-quotas.js';
import { type Enqueue, jobRoute } from '../queue/job-catalog.js';
import { TERMINAL_STATUSES } from '../schemas/run.js';
import type { RunStore } from '../store/run-store.js';

export interface FairShareDeps {
  store: Pick<RunStore, 'get'>;
  quotas: Pick<TenantQuotas, 'takeSlot' | 'release'>;
  enqueue: Enqueue;
}

/**
 * Fair share (`queueBeyondLimit`): a tenant's runs over its concurrency limit wait in its
 * own line, created and `queued` but without a step job, so they never crowd the step
 * queue ahead of other tenants' runs. Each freed slot goes to the oldest waiting run
 * (take-slot-2.lua, atomic in the tenant's slot), which then gets its first step.
 */
export function createFairShare(deps: FairShareDeps) {
  return {
    /** Starts waiting runs of `tenantId` while slots are free; `freed`: a finished run whose slot is free. Returns how many. */
    async fill(tenantId: string, freed?: string): Promise<number> {
      let started = 0;
      for (let next = await deps.quotas.takeSlot(tenantId, freed); next; next = await deps.quotas.takeSlot(tenantId)) {
        const run = await deps.store.get(next);
        if (!run || TERMINAL_STATUSES.includes(run.status)) {
          await deps.quotas.release(tenantId, next); // ended while waiting: its slot goes to the next one
          continue;
        }
        // A run also queued behind its session gets its first step when the session admits it.
        if (!run.queuedBehind)
          await deps.enqueue('step', { runId: run.id, step: run.step, tenantId, traceparent: run.traceparent }, { route: jobRoute(run) });
        started++;
      }
      return started;
    },
  };
}

export type FairShare = ReturnType<typeof createFairShare>;
