import type { Approval } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { decisionRights, mayDecide } from '../src/policy/approvals/decision-rights.js';
import { escalated, escalationDueAt, firstEscalation } from '../src/policy/approvals/escalation.js';
import { decidedAudit, decidersOf, governanceOf, requestedAudit } from '../src/policy/approvals/governance.js';
import { approvalsNeeded, tallyApproval } from '../src/policy/approvals/quorum.js';

const base: Approval = {
  schemaVersion: 1,
  id: 'r.0.0',
  runId: 'r',
  step: 0,
  toolCallId: 'c',
  tenantId: 't',
  requestedBy: 'alice',
  toolName: 'wire',
  arguments: { amount: 1 },
  argsHash: 'a'.repeat(64),
  policyVersion: 1,
  summary: 's',
  risk: 'high',
  requiredRole: 'approver',
  status: 'pending',
  createdAt: '2026-01-01T00:00:00.000Z',
  expiresAt: '2026-01-01T00:00:10.000Z',
};
const at = '2026-01-01T00:00:01.000Z';

describe('tallyApproval (pure)', () => {
  it('decides at once without a quorum', () => {
    expect(tallyApproval(base, base, { by: 'bob', at })).toMatchObject({
      kind: 'decided',
      approval: { status: 'approved', decidedBy: 'bob' },
    });
  });

  it('counts distinct approvers until the quorum, refuses a second vote by the same person', () => {
    const q = { ...base, quorum: 2 };
    const one = tallyApproval(q, q, { by: 'bob', at });
    expect(one).toMatchObject({ kind: 'counted', approval: { status: 'pending', approvals: [{ by: 'bob', at }] } });
    if (one.kind === 'already_approved') throw new Error('unexpected');
    expect(approvalsNeeded(one.approval)).toBe(1);
    expect(tallyApproval(one.approval, one.approval, { by: 'bob', at })).toEqual({ kind: 'already_approved' });
    expect(tallyApproval(one.approval, one.approval, { by: 'dave', at })).toMatchObject({ kind: 'decided' });
  });

  it('never counts the requester, even if a vote of theirs was stored', () => {
    const q = { ...base, quorum: 2, approvals: [{ by: 'alice', at }] };
    expect(tallyApproval(q, q, { by: 'bob', at })).toMatchObject({ kind: 'counted' });
  });

  it('starts the count again from an edit, keeping the edited arguments on the vote', () => {
    const q = { ...base, quorum: 2, approvals: [{ by: 'bob', at }] };
    const judged = { ...q, argsHash: 'b'.repeat(64), approvedArguments: { amount: 2 }, editedBy: 'dave' };
    expect(tallyApproval(q, judged, { by: 'dave', at })).toMatchObject({
      kind: 'counted',
      approval: { approvals: [{ by: 'dave', arguments: { amount: 2 } }] },
    });
  });

  it('takes a quorum away from the requester in the decision rights', () => {
    expect(decisionRights({ ...base, quorum: 2 }).requester).toBe('never');
    expect(mayDecide({ tenantId: 't', userId: 'alice', roles: ['admin'] }, { ...base, quorum: 2 })).toBe(false);
    expect(mayDecide({ tenantId: 't', userId: 'alice', roles: ['admin'] }, base)).toBe(true);
  });
});

describe('escalated (pure)', () => {
  const esc = { ...base, escalate: { afterMs: 1000, toRole: 'supervisor' as const } };
  const t0 = Date.parse(base.createdAt);

  it('is due afterMs after creation, then after the last escalation', () => {
    expect(escalationDueAt(esc)).toBe(t0 + 1000);
    expect(escalated(esc, t0 + 999, {})).toBeNull();
    const up = escalated(esc, t0 + 1000, { supervisor: { afterMs: 500, toRole: 'admin' } });
    expect(up).toMatchObject({ requiredRole: 'supervisor', escalate: { toRole: 'admin' }, expiresAt: '2026-01-01T00:00:11.000Z' });
    expect(up && escalationDueAt(up)).toBe(t0 + 1500);
  });

  it('never lowers the role, ends a chain that would not go higher, and never escalates an expired approval', () => {
    const down = escalated({ ...base, requiredRole: 'supervisor', escalate: { afterMs: 1, toRole: 'approver' } }, t0 + 1, {
      supervisor: { afterMs: 1, toRole: 'supervisor' },
    });
    expect(down).toMatchObject({ requiredRole: 'supervisor' });
    expect(down?.escalate).toBeUndefined();
    expect(escalated(esc, t0 + 10_000, {})).toBeNull();
    expect(escalated({ ...esc, status: 'approved' }, t0 + 1000, {})).toBeNull();
  });

  it('drops the approvals a quorum had under the lower role', () => {
    expect(escalated({ ...esc, quorum: 2, approvals: [{ by: 'bob', at }] }, t0 + 1000, {})?.approvals).toBeUndefined();
  });

  it('takes the policy’s escalation first, else the app-wide one of the role', () => {
    const d = { approver: { afterMs: 5, toRole: 'admin' as const } };
    expect(firstEscalation('approver', undefined, d)).toEqual(d.approver);
    expect(firstEscalation('approver', { afterMs: 1, toRole: 'supervisor' }, d)).toEqual({ afterMs: 1, toRole: 'supervisor' });
    expect(firstEscalation('supervisor', undefined, d)).toBeUndefined();
  });
});

describe('governance (pure): one place copies, shows and logs what an approval needs', () => {
  const requirement = {
    risk: 'critical' as const,
    requiredRole: 'approver' as const,
    summary: 'wire 9000',
    context: { customer: 'ACME' },
    quorum: 2,
    escalate: { afterMs: 1_000, toRole: 'admin' as const },
  };

  it("copies every field of the tool's requirement onto the approval", () => {
    expect(governanceOf(requirement, {})).toEqual(requirement);
  });

  it('takes the app-wide escalation of the role when the policy names none, and adds no field the policy left out', () => {
    const supervisorAfter = { afterMs: 5_000, toRole: 'supervisor' as const };
    expect(governanceOf({ risk: 'high', requiredRole: 'approver', summary: 's' }, { approver: supervisorAfter })).toEqual({
      risk: 'high',
      requiredRole: 'approver',
      summary: 's',
      escalate: supervisorAfter,
    });
  });

  it("shows who must still decide: the rights, and a quorum's approvals still needed (0 once decided)", () => {
    const q = { ...base, quorum: 2, approvals: [{ by: 'bob', at }] };
    expect(decidersOf(q)).toEqual({ deciders: { role: 'approver', requester: 'never' }, approvalsNeeded: 1 });
    expect(decidersOf({ ...q, status: 'approved' }).approvalsNeeded).toBe(0);
    expect(decidersOf(base)).toEqual({ deciders: { role: 'approver', requester: 'as_proposed' } });
  });

  it('logs what an approval asked for needs, and who approved a quorum', () => {
    expect(requestedAudit({ ...base, quorum: 3 })).toEqual({ risk: 'high', requiredRole: 'approver', quorum: 3 });
    expect(requestedAudit(base)).toEqual({ risk: 'high', requiredRole: 'approver' });
    const approvals = ['bob', 'carol'].map((by) => ({ by, at }));
    expect(decidedAudit({ ...base, status: 'approved', approvals })).toEqual({ approvedBy: ['bob', 'carol'] });
    expect(decidedAudit(base)).toEqual({});
  });
});
