import type { Approval, AuditAction, AuditRecord, RunEvent, RunRecord } from '@rein/contract';
import { decidedAudit, requestedAudit } from '../approvals/governance.js';

/** Who acts when nobody does: a timer's expiry or escalation. */
export const SYSTEM_ACTOR = 'system';

type Kind = 'step' | 'start' | 'decide' | 'cancel' | 'compensate' | 'admit' | 'upgrade' | 'raise';
/** What a commit writes, as far as the log cares. */
type Written = { to: Pick<RunRecord, 'updatedAt' | 'limits'>; approvals?: Approval[]; events?: RunEvent[] };

/**
 * The decision-log records of one commit (pure), read from what it writes, so that every
 * governance event of a run is logged at the one place it happens (the applier): the
 * approvals a park or a saga asks for, every change of an approval a decision or a timer
 * makes, a cancel with what it withdrew, an app-version upgrade's withdrawn approvals, a
 * run's budget raised by a granted `budget` approval.
 */
export function commitAudit(kind: Kind, from: RunRecord, change: Written, created: readonly Approval[]): AuditRecord[] {
  const approvals = change.approvals ?? [];
  if (kind === 'step') return created.map((a) => requested(a, 'approval.requested'));
  if (kind === 'compensate') return approvals.filter((a) => a.status === 'pending').map((a) => requested(a, 'compensation.requested'));
  // An upgrade withdraws the approvals whose tool changed in the new app version.
  if (kind === 'decide' || kind === 'upgrade') return approvals.map((a) => changed(a, change.to.updatedAt));
  // A granted budget approval's raise, as the run's limits now are (the approval's own entry says who granted it).
  if (kind === 'raise')
    return [
      {
        tenantId: from.tenantId,
        actor: SYSTEM_ACTOR,
        action: 'run.budget_raised',
        subject: { runId: from.id },
        data: { from: from.limits, to: change.to.limits },
      },
    ];
  if (kind === 'cancel') {
    const by = approvals[0]?.decidedBy ?? finishedBy(change) ?? SYSTEM_ACTOR;
    return [
      ...approvals.map((a) => changed(a, change.to.updatedAt)),
      { tenantId: from.tenantId, actor: by, action: 'run.cancelled', subject: { runId: from.id } },
    ];
  }
  return [];
}

const finishedBy = (change: Written) => {
  const by = change.events?.find((e) => e.type === 'run.finished')?.data.by;
  return typeof by === 'string' ? by : undefined;
};

const subject = (a: Approval) => ({ runId: a.runId, approvalId: a.id });

function requested(a: Approval, action: AuditAction): AuditRecord {
  return {
    tenantId: a.tenantId,
    actor: a.requestedBy,
    action,
    subject: subject(a),
    data: {
      toolName: a.toolName,
      argsHash: a.argsHash,
      ...requestedAudit(a),
    },
  };
}

const ACTION_OF = {
  approved: 'approval.approved',
  rejected: 'approval.rejected',
  expired: 'approval.expired',
  withdrawn: 'approval.withdrawn',
} as const;

/** A changed approval: decided, expired, withdrawn — or still pending, escalated (at `at`) or with one approval of several counted. */
function changed(a: Approval, at: string): AuditRecord {
  const edits = a.editedBy !== undefined ? { editedBy: a.editedBy, approvedArguments: a.approvedArguments } : {};
  const base = { tenantId: a.tenantId, subject: subject(a) };
  if (a.status === 'pending') {
    const last = a.escalations?.at(-1);
    if (a.escalatedAt === at && last)
      return { ...base, actor: SYSTEM_ACTOR, action: 'approval.escalated', data: { from: last.from, to: last.to, expiresAt: a.expiresAt } };
    const vote = a.approvals?.at(-1);
    return { ...base, actor: vote?.by ?? SYSTEM_ACTOR, action: 'approval.voted', data: { argsHash: a.argsHash, ...edits } };
  }
  const actor = a.status === 'expired' ? SYSTEM_ACTOR : (a.decidedBy ?? SYSTEM_ACTOR);
  return {
    ...base,
    actor,
    action: ACTION_OF[a.status],
    data: {
      toolName: a.toolName,
      argsHash: a.argsHash,
      ...edits,
      ...decidedAudit(a),
      ...(a.comment ? { comment: a.comment } : {}),
    },
  };
}
