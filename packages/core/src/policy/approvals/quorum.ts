import type { Approval, ApprovalVote } from '@rein/contract';

/** What one approver's approval does to an approval: decides it, counts towards its quorum, or repeats a vote. */
export type Tally = { kind: 'decided' | 'counted'; approval: Approval } | { kind: 'already_approved' };

/**
 * One approve counted (pure). `stored`: the approval as read; `judged`: the same with this
 * approver's edit applied (or `stored` itself). Without a quorum one approve decides. With
 * one, the approval stays pending until `quorum` distinct people other than the requester
 * approved the same arguments: an edit starts the count again from its editor, since the
 * others approved other arguments. The caller has checked the approver's rights
 * (`mayDecide`, which never lets the requester decide a quorum).
 */
export function tallyApproval(stored: Approval, judged: Approval, vote: { by: string; at: string; comment?: string }): Tally {
  const comment = vote.comment ? { comment: vote.comment } : {};
  const decide = (extra: Partial<Approval>): Tally => ({
    kind: 'decided',
    approval: { ...judged, ...extra, status: 'approved', decidedBy: vote.by, decidedAt: vote.at, ...comment },
  });
  if (judged.quorum === undefined) return decide({});
  const edited = judged.argsHash !== stored.argsHash;
  const prior = edited ? [] : (stored.approvals ?? []);
  if (prior.some((v) => v.by === vote.by)) return { kind: 'already_approved' };
  const cast: ApprovalVote = { by: vote.by, at: vote.at, ...comment, ...(edited ? { arguments: judged.approvedArguments } : {}) };
  const approvals = [...prior, cast];
  if (distinctApprovers(judged, approvals) >= judged.quorum) return decide({ approvals });
  return { kind: 'counted', approval: { ...judged, approvals } };
}

/** Approvers who count: distinct, never the requester. */
const distinctApprovers = (a: Pick<Approval, 'requestedBy'>, votes: readonly ApprovalVote[]) =>
  new Set(votes.map((v) => v.by).filter((by) => by !== a.requestedBy)).size;

/** How many more approvals a quorum approval needs (0 once it has them; 0 without a quorum). */
export const approvalsNeeded = (a: Pick<Approval, 'quorum' | 'approvals' | 'requestedBy'>): number =>
  a.quorum === undefined ? 0 : Math.max(0, a.quorum - distinctApprovers(a, a.approvals ?? []));
