import type { Approval, ApprovalView } from '@rein/contract';
import type { ApprovalRequirement } from '@rein/define/internal';
import { decisionRights } from './decision-rights.js';
import { type EscalationDefaults, firstEscalation } from './escalation.js';
import { approvalsNeeded } from './quorum.js';

/**
 * An approval's governance: what its tool's policy asks of the people who decide it (risk,
 * role, quorum, escalation). Copied onto the approval, shown in its view and written to the
 * decision log here only, so a new approval policy is added in this folder, the definition
 * (`ApprovalRequirement`) and the contract (`Approval`, `ApprovalView`); the step, the views
 * and the decision log call these without naming any policy.
 */
export type Governance = Pick<Approval, 'summary' | 'context' | 'risk' | 'requiredRole' | 'quorum' | 'escalate'>;

/** The requirement's governance as a new approval holds it; its escalation: its own, else the app-wide one of its role. */
export function governanceOf(requirement: ApprovalRequirement, escalation: EscalationDefaults): Governance {
  const escalate = firstEscalation(requirement.requiredRole, requirement.escalate, escalation);
  return {
    summary: requirement.summary,
    ...(requirement.context ? { context: requirement.context } : {}),
    risk: requirement.risk,
    requiredRole: requirement.requiredRole,
    ...(requirement.quorum !== undefined ? { quorum: requirement.quorum } : {}),
    ...(escalate ? { escalate } : {}),
  };
}

/** Who must still decide, as an approval's view shows it: the rights `mayDecide` enforces, a quorum's approvals still needed. */
export const decidersOf = (a: Omit<Approval, 'schemaVersion'>): Pick<ApprovalView, 'deciders' | 'approvalsNeeded'> => ({
  deciders: decisionRights(a),
  ...(a.quorum !== undefined ? { approvalsNeeded: a.status === 'pending' ? approvalsNeeded(a) : 0 } : {}),
});

/** What the decision log records of an approval asked for: what it needs to be decided. */
export const requestedAudit = (a: Approval): Record<string, unknown> => ({
  risk: a.risk,
  requiredRole: a.requiredRole,
  ...(a.quorum !== undefined ? { quorum: a.quorum } : {}),
});

/** What the decision log records of a decided approval: who approved it, when more than one had to. */
export const decidedAudit = (a: Approval): Record<string, unknown> => (a.approvals ? { approvedBy: a.approvals.map((v) => v.by) } : {});
