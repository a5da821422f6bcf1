import { runEvent } from '../engine/run-event.js';
import { ConflictError, ForbiddenError, GoneError, NotFoundError, StaleStepError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { JobName, StepJob } from '../queue/job-catalog.js';
import { approvalView } from '../runs/run-service.js';
import type { Approval, ApprovalStatus } from '../schemas/approval.js';
import type { Principal } from '../schemas/identity.js';
import type { RunStore } from '../store/run-store.js';

export type Decision = { kind: 'approve'; comment?: string } | { kind: 'reject'; reason: string };

const APPROVAL_ID = /^([0-9a-f-]{36})\.\d+\.\d+$/;

/**
 * Who may decide: for `high` risk the requesting user or a tenant approver; for
 * `critical` only a supervisor (or admin), and never the requester — four eyes.
 */
export function mayDecide(principal: Principal, approval: Approval): boolean {
  const elevated = principal.roles.some((r) => r === 'supervisor' || r === 'admin');
  if (approval.risk === 'critical') return elevated && principal.userId !== approval.requestedBy;
  return principal.userId === approval.requestedBy || elevated || principal.roles.includes('approver');
}

/** List and decide approvals; a decision that completes a step enqueues its resume. */
export function createApprovalService(deps: {
  store: RunStore;
  enqueue: (name: JobName, job: StepJob) => Promise<void>;
  metrics: Metrics;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;

  async function find(principal: Principal, id: string) {
    const runId = APPROVAL_ID.exec(id)?.[1];
    const run = runId ? await deps.store.get(runId) : null;
    const approval = run ? (await deps.store.approvals(run.id)).find((a) => a.id === id) : undefined;
    if (!run || !approval || approval.tenantId !== principal.tenantId) throw new NotFoundError(`approval ${id}`);
    return { run, approval };
  }

  return {
    async list(principal: Principal, status: ApprovalStatus | undefined, limit = 100) {
      const ids = await deps.store.tenantApprovalIds(principal.tenantId, 1000);
      const out: ReturnType<typeof approvalView>[] = [];
      for (const id of ids) {
        if (out.length >= limit) break;
        const found = await find(principal, id).catch(() => null); // expired traces drop out
        if (found && (!status || found.approval.status === status)) out.push(approvalView(found.approval));
      }
      return out;
    },

    async get(principal: Principal, id: string) {
      return approvalView((await find(principal, id)).approval);
    },

    /** Exactly one decision wins (compare-and-set on the run); the loser gets 409. */
    async decide(principal: Principal, id: string, decision: Decision) {
      for (;;) {
        const { run, approval } = await find(principal, id);
        if (approval.status === 'expired') throw new GoneError('approval_expired', `approval ${id} expired at ${approval.expiresAt}`);
        if (approval.status !== 'pending') throw new ConflictError('approval_decided', `approval ${id} is already ${approval.status}`);
        if (!mayDecide(principal, approval)) {
          throw new ForbiddenError(
            approval.risk === 'critical'
              ? `approval ${id} is critical: a supervisor other than the requester must decide`
              : `approval ${id} may be decided by its requester or a tenant approver`,
          );
        }
        const at = now();
        const expired = at >= Date.parse(approval.expiresAt);
        const status: ApprovalStatus = expired ? 'expired' : decision.kind === 'approve' ? 'approved' : 'rejected';
        const comment = decision.kind === 'approve' ? decision.comment : decision.reason;
        const decided: Approval = {
          ...approval,
          status,
          decidedAt: new Date(at).toISOString(),
          ...(expired ? {} : { decidedBy: principal.userId }),
          ...(comment && !expired ? { comment } : {}),
        };
        const stillPending = run.pendingApprovals.filter((p) => p !== id);
        try {
          await deps.store.commit({
            from: run,
            to: { ...run, pendingApprovals: stillPending, updatedAt: decided.decidedAt as string },
            approvals: [decided],
            events: [
              runEvent('approval.decided', run.id, approval.step, {
                approvalId: id,
                status,
                decidedBy: decided.decidedBy ?? null,
                comment: decided.comment ?? null,
              }),
            ],
          });
        } catch (err) {
          if (err instanceof StaleStepError) continue; // something else changed the run: re-read and re-check
          throw err;
        }
        deps.metrics.approvalsDecided.inc({ tool: approval.toolName, decision: status });
        if (stillPending.length === 0 && run.status === 'pending_approval') {
          await deps.enqueue('resume', { runId: run.id, step: approval.step });
        }
        if (expired) throw new GoneError('approval_expired', `approval ${id} expired at ${approval.expiresAt}`);
        return approvalView(decided);
      }
    },
  };
}

export type ApprovalService = ReturnType<typeof createApprovalService>;
