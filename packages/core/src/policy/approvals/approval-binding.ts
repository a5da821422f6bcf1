import type { Approval } from '@rein/contract';
import type { ApprovalRequirement, Tool } from '@rein/define/internal';
import { hashArguments } from '../app/argument-hash.js';
import { ROLE_RANK } from './decision-rights.js';

export type Binding = { ok: true; args: unknown } | { ok: false; problem: string };

/**
 * An approval is a capability for one exact call: this run, step and tool call, these
 * arguments (by hash), judged by this version of the tool's policy. Checked by the
 * worker at the moment it executes, so nothing but what was approved can run.
 */
export function verifyBinding(tool: Tool, approval: Approval, call: { runId: string; step: number; toolCallId: string }): Binding {
  if (approval.runId !== call.runId || approval.step !== call.step || approval.toolCallId !== call.toolCallId) {
    return { ok: false, problem: `approval ${approval.id} was granted for a different call` };
  }
  if (approval.policyVersion !== (tool.policyVersion ?? 1)) {
    return {
      ok: false,
      problem: `the approval policy of ${tool.name} changed after approval ${approval.id} was granted; it must be asked again`,
    };
  }
  const parsed = tool.parameters.safeParse(approval.approvedArguments ?? approval.arguments);
  if (!parsed.success || hashArguments(parsed.data) !== approval.argsHash) {
    return { ok: false, problem: `the arguments differ from what approval ${approval.id} approved` };
  }
  return { ok: true, args: parsed.data };
}

const RISK_RANK = { high: 1, critical: 2 } as const;

/** An edit is judged again, but can never need less than the original call did. */
export function stricterOf(original: ApprovalRequirement, edited: ApprovalRequirement | null): ApprovalRequirement {
  if (!edited) return original;
  const quorum = Math.max(original.quorum ?? 0, edited.quorum ?? 0);
  return {
    risk: RISK_RANK[edited.risk] > RISK_RANK[original.risk] ? edited.risk : original.risk,
    requiredRole: ROLE_RANK[edited.requiredRole] > ROLE_RANK[original.requiredRole] ? edited.requiredRole : original.requiredRole,
    summary: edited.summary,
    // The fields describe the arguments that will run: the edit's, or none.
    context: edited.context,
    ...(quorum ? { quorum } : {}),
  };
}

/** Whether a call needs more than an approval granted: a higher risk, a higher role or more people. */
export const exceeds = (needed: Omit<ApprovalRequirement, 'summary'>, granted: Omit<ApprovalRequirement, 'summary'>) =>
  RISK_RANK[needed.risk] > RISK_RANK[granted.risk] ||
  ROLE_RANK[needed.requiredRole] > ROLE_RANK[granted.requiredRole] ||
  (needed.quorum ?? 1) > (granted.quorum ?? 1);
