import type { Principal, RunRecord } from '@rein/contract';
import { mayReadRun, overseesTenant } from '../../policy/approvals/decision-rights.js';

/** The owners of runs by id, null where a run is gone (`RunStore.getMany`). */
export type RunOwners = (runIds: string[]) => Promise<Array<Pick<RunRecord, 'tenantId' | 'userId'> | null>>;

/**
 * What of the tenant's approval feed a caller may receive: everything for those who
 * oversee the tenant; for anyone else only what names a run they may read (`mayReadRun`,
 * the rule of `GET /v1/runs/:id`), so a plain user never learns another user's run or
 * approval ids. A run that is gone shows nothing.
 */
export function feedVisibleTo(principal: Principal, owners: RunOwners) {
  return async <T>(items: T[], runIdOf: (item: T) => string): Promise<T[]> => {
    if (overseesTenant(principal) || items.length === 0) return items;
    const ids = [...new Set(items.map(runIdOf))];
    const runs = await owners(ids);
    const readable = new Set(ids.filter((_, n) => runs[n] && mayReadRun(principal, runs[n])));
    return items.filter((item) => readable.has(runIdOf(item)));
  };
}
