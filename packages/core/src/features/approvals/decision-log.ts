import type { AuditQuery, Principal } from '@rein/contract';
import type { AuditLog } from '../../adapters/redis/audit-log.js';
import { holdsRole } from '../../policy/approvals/decision-rights.js';
import { ForbiddenError } from '../../shared/errors.js';

/** `GET /v1/audit`: a tenant's decision log, for its admins only (it names every run and approver). */
export function createDecisionLog(log: Pick<AuditLog, 'page' | 'latestCheckpoint'>) {
  return {
    async page(principal: Principal, q: AuditQuery) {
      if (!holdsRole(principal.roles, 'admin')) throw new ForbiddenError('the decision log is read by tenant admins');
      const [page, checkpoint] = await Promise.all([
        log.page(principal.tenantId, {
          limit: q.limit,
          ...(q.from ? { from: Date.parse(q.from) } : {}),
          ...(q.to ? { to: Date.parse(q.to) } : {}),
          ...(q.cursor ? { cursor: Number(q.cursor) } : {}),
        }),
        // Kept outside Redis: a verifier checks the chain still holds it.
        log.latestCheckpoint(principal.tenantId),
      ]);
      return { ...page, ...(checkpoint ? { checkpoint } : {}) };
    },
  };
}

export type DecisionLog = ReturnType<typeof createDecisionLog>;
