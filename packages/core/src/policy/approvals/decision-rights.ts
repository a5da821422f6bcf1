import type { Approval, Principal, Role, RunRecord, TenantRole } from '@rein/contract';

/** Tenant roles in order of authority: a role may do whatever a lower one may. */
export const ROLE_RANK: Record<TenantRole, number> = { user: 0, approver: 1, supervisor: 2, admin: 3 };

/** Whether `roles` reach the tenant role `role`; `operator` is outside the order and reaches none. */
export const holdsRole = (roles: readonly Role[], role: TenantRole) =>
  roles.some((r) => r !== 'operator' && ROLE_RANK[r] >= ROLE_RANK[role]);

/** Fleet-wide actions (app versions, the queue board) need `operator`; a tenant's admin acts on its own tenant only. */
export const isOperator = (roles: readonly Role[]) => roles.includes('operator');

/** Someone who may see every run and approval of their tenant (not only their own). */
export const overseesTenant = (principal: Principal) => holdsRole(principal.roles, 'approver');

/**
 * Who may read a run and what names it (its events, approvals, uncertain writes): its
 * owner, and those who oversee the tenant; never another tenant. Everything that shows
 * a run's ids to a caller asks this.
 */
export const mayReadRun = (principal: Principal, run: Pick<RunRecord, 'tenantId' | 'userId'>) =>
  run.tenantId === principal.tenantId && (run.userId === principal.userId || overseesTenant(principal));

/**
 * Who may decide an approval, as enforced and as the console shows it: another person
 * holding `role` (at least an approver; a supervisor for critical risk), or — for high
 * risk only — the requester, if they hold the policy's `requiredRole`, and only as
 * proposed: an edit always needs a second person (four eyes), and so does an approval
 * marked `fourEyes` (a budget raise, by default). A quorum approval is never the
 * requester's to decide: it counts distinct other people.
 */
export interface DecisionRights {
  role: TenantRole;
  requester: 'as_proposed' | 'never';
}

export function decisionRights(approval: Pick<Approval, 'risk' | 'requiredRole' | 'quorum' | 'fourEyes'>): DecisionRights {
  const floor: TenantRole = approval.risk === 'critical' ? 'supervisor' : 'approver';
  return {
    role: ROLE_RANK[approval.requiredRole] > ROLE_RANK[floor] ? approval.requiredRole : floor,
    requester: approval.risk === 'high' && approval.quorum === undefined && !approval.fourEyes ? 'as_proposed' : 'never',
  };
}

export function mayDecide(
  principal: Principal,
  approval: Pick<Approval, 'risk' | 'requiredRole' | 'requestedBy' | 'quorum' | 'fourEyes'>,
  opts: { withEdits: boolean } = { withEdits: false },
): boolean {
  const rights = decisionRights(approval);
  if (principal.userId !== approval.requestedBy) return holdsRole(principal.roles, rights.role);
  return rights.requester === 'as_proposed' && !opts.withEdits && holdsRole(principal.roles, approval.requiredRole);
}

/** "an approver", "a supervisor". */
const withArticle = (role: string) => `${/^[aeiou]/i.test(role) ? 'an' : 'a'} ${role}`;

/** Why `mayDecide` said no, for the 403 message. */
export function decisionRefusal(
  approval: Pick<Approval, 'id' | 'risk' | 'requiredRole' | 'quorum' | 'fourEyes'>,
  withEdits: boolean,
): string {
  const rights = decisionRights(approval);
  const others = `${withArticle(rights.role)} (or higher) other than the requester`;
  if (approval.quorum !== undefined) return `approval ${approval.id} needs ${approval.quorum} distinct approvers, each ${others}`;
  if (approval.fourEyes) return `approval ${approval.id} needs four eyes: ${others} must decide`;
  if (rights.requester === 'never') return `approval ${approval.id} is ${approval.risk}: ${others} must decide`;
  return withEdits
    ? `approval ${approval.id} with edits needs ${others}`
    : `approval ${approval.id} may be decided by ${others}, or by its requester as proposed if they hold the ${approval.requiredRole} role`;
}
