import type { Approval, RunRecord } from '@rein/contract';
import type { ApprovalRequirement, InputReply, Tool } from '@rein/define/internal';
import { verifyBinding } from '../approvals/approval-binding.js';
import { approvalId } from '../approvals/approval-id.js';
import { approvalRequest } from '../approvals/approval-request.js';
import type { EscalationDefaults } from '../approvals/escalation.js';

/**
 * A call's questions for a person (ToolNeedsInputError): each an approval of kind `input`
 * for the same call, whose approved arguments are the answer. The call runs again with
 * the reply once its last question is decided; it asks at most MAX_INPUT_ROUNDS.
 */

/** The most questions one call asks a person; its tool ends the call with the next one. */
export const MAX_INPUT_ROUNDS = 5;

/**
 * A question's place in its step's approval ids: past the calls' own indexes and the
 * budget's (1_000_000), MAX_INPUT_ROUNDS ids per call, so each round has an id of its own.
 */
const INPUT_INDEX = 2_000_000;

export const inputApprovalId = (runId: string, step: number, index: number, round: number) =>
  approvalId(runId, step, INPUT_INDEX + index * MAX_INPUT_ROUNDS + round - 1);

export interface AskedQuestion {
  round: number;
  approval: Approval;
}

/** The last question the call at `index` of the run's current step asked, if it asked any. */
export function lastQuestion(run: RunRecord, approvals: readonly Approval[], index: number): AskedQuestion | undefined {
  if (!approvals.some((a) => a.kind === 'input')) return undefined; // the usual step: no call asked anything
  for (let round = MAX_INPUT_ROUNDS; round >= 1; round--) {
    const id = inputApprovalId(run.id, run.step, index, round);
    const approval = approvals.find((a) => a.id === id);
    if (approval) return { round, approval };
  }
  return undefined;
}

/**
 * What a person made of the question: not yet decided, or the reply the call goes on with.
 * An answer binds like any approval (this call, these arguments, this policy); one that
 * no longer binds is no answer.
 */
export function replyTo(
  tool: Tool,
  { round, approval }: AskedQuestion,
  call: { runId: string; step: number; toolCallId: string },
): InputReply | 'pending' {
  const asked = { round, approvalId: approval.id };
  switch (approval.status) {
    case 'pending':
      return 'pending';
    case 'approved': {
      const binding = verifyBinding(tool, approval, call);
      return binding.ok ? { ...asked, answered: true, args: binding.args } : { ...asked, answered: false, why: binding.problem };
    }
    case 'rejected':
      return { ...asked, answered: false, why: `${approval.decidedBy} declined to answer: ${approval.comment || 'no reason given'}` };
    case 'expired':
      return { ...asked, answered: false, why: `nobody answered before ${approval.expiresAt}` };
    case 'withdrawn':
      return { ...asked, answered: false, why: 'the question was withdrawn' };
  }
}

export interface QuestionFacts {
  run: RunRecord;
  /** The call's place in its step, and its id. */
  index: number;
  toolCallId: string;
  tool: Tool;
  asked: { round: number; requirement: ApprovalRequirement; proposed: unknown };
  now: number;
  approvalTtlMs: number;
  escalation?: EscalationDefaults;
}

/** The approval a call's question parks its step on: same call, the answer as its arguments. */
export function questionApproval(f: QuestionFacts): Approval {
  const { round } = f.asked;
  if (!Number.isInteger(round) || round < 1 || round > MAX_INPUT_ROUNDS)
    throw new Error(`${f.tool.name} asked question ${round}; a call asks 1 to ${MAX_INPUT_ROUNDS}`);
  return approvalRequest({
    run: f.run,
    id: inputApprovalId(f.run.id, f.run.step, f.index, round),
    kind: 'input',
    toolCallId: f.toolCallId,
    tool: f.tool,
    args: f.asked.proposed,
    requirement: f.asked.requirement,
    now: f.now,
    approvalTtlMs: f.approvalTtlMs,
    ...(f.escalation ? { escalation: f.escalation } : {}),
  });
}
