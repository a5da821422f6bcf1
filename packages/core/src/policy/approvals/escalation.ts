import type { Approval, Escalation, TenantRole } from '@rein/contract';
import { ROLE_RANK } from './decision-rights.js';

/** The app-wide escalation of an approval by the role it needs (REIN_APPROVAL_ESCALATION), when its policy names none. */
export type EscalationDefaults = Partial<Record<TenantRole, Escalation>>;

/** The escalation a new approval waits for: its policy's, else the app-wide one for its role. */
export const firstEscalation = (requiredRole: TenantRole, own: Escalation | undefined, defaults: EscalationDefaults) =>
  own ?? defaults[requiredRole];

/** When the approval's next escalation is due (ms), or undefined when none is. */
export function escalationDueAt(a: Approval): number | undefined {
  if (a.status !== 'pending' || !a.escalate) return undefined;
  return Date.parse(a.escalatedAt ?? a.createdAt) + a.escalate.afterMs;
}

/**
 * The approval escalated at `at` (pure), or null when it is not due. Its `requiredRole`
 * becomes `toRole`, never a lower one; its expiry is measured from now with the time it
 * had; the approvals of a quorum so far are dropped (given under the lower role); the next
 * escalation is the app-wide one of the new role, if that one goes higher still (so a chain
 * always ends).
 */
export function escalated(a: Approval, at: number, defaults: EscalationDefaults): Approval | null {
  const due = escalationDueAt(a);
  // An approval past its expiry expires; it does not escalate.
  if (due === undefined || at < due || !a.escalate || at >= Date.parse(a.expiresAt)) return null;
  const since = Date.parse(a.escalatedAt ?? a.createdAt);
  const to = ROLE_RANK[a.escalate.toRole] > ROLE_RANK[a.requiredRole] ? a.escalate.toRole : a.requiredRole;
  const next = defaults[to];
  const { escalate: _done, approvals: _given, ...rest } = a;
  const iso = new Date(at).toISOString();
  return {
    ...rest,
    requiredRole: to,
    escalatedAt: iso,
    expiresAt: new Date(at + Math.max(0, Date.parse(a.expiresAt) - since)).toISOString(),
    escalations: [...(a.escalations ?? []), { at: iso, from: a.requiredRole, to }],
    ...(next && ROLE_RANK[next.toRole] > ROLE_RANK[to] ? { escalate: next } : {}),
  };
}
