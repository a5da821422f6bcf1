import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { type Enqueue, jobRoute, slotJobSchema } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import type { TenantQuotas } from '../../adapters/redis/tenant-quotas.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { RunEndPlug } from '../run-end.js';

export interface FairShareDeps {
  store: Pick<RunRepository, 'get'>;
  quotas: Pick<TenantQuotas, 'takeSlot' | 'release' | 'fairShared' | 'enterFairShare' | 'takeTurn'>;
  enqueue: Enqueue;
}

/**
 * Fair share (`queueBeyondLimit`): a tenant's runs over its concurrency limit wait in its
 * own line, created and `queued` but without a step job, so they never crowd the step
 * queue ahead of other tenants' runs. Each freed slot goes to the oldest waiting run
 * (take-slot-2.lua, atomic in the tenant's slot), which then gets its first step. With
 * `fairShareSlots`, a run holding its tenant's slot also waits for one of the fleet-wide
 * slots, handed out round-robin across the waiting tenants (take-turn-3.lua).
 */
export function createFairShare(deps: FairShareDeps) {
  /** A run now holding its slot gets its first step (one also queued behind its session gets it when the session admits it). */
  async function start(run: RunRecord): Promise<void> {
    if (!run.queuedBehind)
      await deps.enqueue(
        'step',
        { runId: run.id, step: run.step, tenantId: run.tenantId, traceparent: run.traceparent },
        { route: jobRoute(run) },
      );
  }

  /**
   * The run a slot was handed to, or null when it ended while waiting (its slot is given
   * back). A line holds only runs whose record was written (a run joins after its creation),
   * so a missing record is a run that ended and left Redis, never one still being created.
   */
  async function live(tenantId: string, runId: string): Promise<RunRecord | null> {
    const run = await deps.store.get(runId);
    if (run && !TERMINAL_STATUSES.includes(run.status)) return run;
    await deps.quotas.release(tenantId, runId);
    return null;
  }

  return {
    /**
     * Starts waiting runs while slots are free: `tenantId`'s for its own slots, then every
     * tenant's in turn for the fleet-wide ones; `freed`: a finished run of `tenantId` whose
     * slot is free. Returns how many started.
     */
    async fill(tenantId: string, freed?: string): Promise<number> {
      const shared = deps.quotas.fairShared(tenantId);
      let started = 0;
      for (let next = await deps.quotas.takeSlot(tenantId, freed); next; next = await deps.quotas.takeSlot(tenantId)) {
        const run = await live(tenantId, next);
        if (!run) continue; // its slot goes to the next one
        if (shared) await deps.quotas.enterFairShare(tenantId, run.id);
        else {
          await start(run);
          started++;
        }
      }
      for (let turn = await deps.quotas.takeTurn(shared ? freed : undefined); turn; turn = await deps.quotas.takeTurn()) {
        const run = await live(turn.tenantId, turn.runId);
        if (!run) continue;
        await start(run);
        started++;
      }
      return started;
    },
  };
}

export type FairShare = ReturnType<typeof createFairShare>;

/** A finished run's slot is free: its tenant's oldest waiting run (fair share) takes it. */
export const fairSharePlug = (quotas: Pick<TenantQuotas, 'quotaOf'>, enqueue: Enqueue): RunEndPlug => ({
  feature: 'fair share',
  async finished(run) {
    if (quotas.quotaOf(run.tenantId).queueBeyondLimit)
      await enqueue('slot', { runId: run.id, tenantId: run.tenantId, freed: true, traceparent: run.traceparent });
  },
});

/** A tenant's freed or joined slot goes to its oldest waiting run. */
export const fairShareJobs = (fairShare: Pick<FairShare, 'fill'>): JobHandlers<'slot'> => ({
  slot: {
    schema: slotJobSchema,
    run: async ({ tenantId, runId, freed }) => `started ${await fairShare.fill(tenantId, freed ? runId : undefined)}`,
  },
});
