import type { AgentProfile } from '../agents/agent-profile.js';
import { verifyBinding } from '../approvals/approval-binding.js';
import { approvalId } from '../approvals/approval-id.js';
import { type EscalationDefaults, firstEscalation } from '../approvals/escalation.js';
import type { Approval, ApprovalStatus } from '../schemas/approval.js';
import type { ModelToolCall } from '../schemas/message.js';
import type { RunRecord, ToolCallRecord, ToolOutcome } from '../schemas/run.js';
import { idempotencyKey } from '../store/effect-ledger.js';
import { hashArguments } from '../tools/argument-hash.js';
import { agentTool, parseToolArguments, requirementOf, type Tool, type ToolContext, thrownMessage } from '../tools/tool.js';
import { linkParsedCallsToPlan, planCoverProblem } from './plan.js';
import { errorObservation } from './tool-observation.js';

/**
 * The call plan: what a step does with each of the model's tool calls, decided on values
 * before anything runs. The allow-list and the caller's roles are checked every time (I7);
 * a gated call runs only on an approval that binds it (I5): its own, or the approved plan's
 * for a call carrying out one of its steps. The tool executor carries out what this says.
 */

/** The trusted context a call runs with (I8), and the run's deadline, which cuts its timeout. */
export type CallContext = Omit<ToolContext, 'signal' | 'logger'> & { deadlineMs: number };

/** Something an operator should see in the log: why a call was refused or asked again. */
export interface CallWarning {
  msg: string;
  fields: Record<string, unknown>;
}

interface Planned {
  call: ModelToolCall;
  /** The arguments the call is recorded with: as parsed, or as the model sent them when they do not parse. */
  args: unknown;
  /** What the call's record carries besides its outcome: the plan step it carries out, the approval that gates it. */
  extra: Pick<ToolCallRecord, 'planStep' | 'approvalId'>;
  warnings: CallWarning[];
  /** The state of the call's own approval, when it is gated by one (a span attribute). */
  approvalDecision?: ApprovalStatus;
}

export type PlannedCall =
  /** Run it: on no approval (`none`), its own approved one (`approval`), or the approved plan's (`plan`). */
  | (Planned & { kind: 'run'; tool: Tool; ctx: CallContext; cover: 'none' | 'approval' | 'plan'; resultPrefix?: string })
  /** Do not run it: the observation tells the model why. */
  | (Planned & {
      kind: 'refuse';
      outcome: Exclude<ToolOutcome, 'ok' | 'uncertain' | 'repeated' | 'awaiting_approval'>;
      observation: string;
    })
  /** Park the step on its approval; `newApproval` is the approval to ask for when none exists yet. */
  | (Planned & { kind: 'await_approval'; observation: string; newApproval?: Approval });

export interface CallPlanInput {
  run: RunRecord;
  profile: AgentProfile;
  tools: ReadonlyMap<string, Tool>;
  /** The step's calls, each with an id of its own (distinctCallIds). */
  calls: readonly ModelToolCall[];
  /** The approvals of this step already asked for. */
  approvals: readonly Approval[];
  now: number;
  /** How long a new approval stays decidable unless its tool says otherwise. */
  approvalTtlMs: number;
  /** The app-wide escalation by required role, for policies that name none. */
  escalation?: EscalationDefaults;
}

/** The record of a call that is not run. */
export function plannedRecord(p: Exclude<PlannedCall, { kind: 'run' }>): ToolCallRecord {
  const outcome = p.kind === 'refuse' ? p.outcome : 'awaiting_approval';
  return { id: p.call.id, name: p.call.name, arguments: p.args, outcome, observation: p.observation, durationMs: 0, ...p.extra };
}

/** One entry per call, in the calls' order. The arguments of each call are parsed once, here. */
export function planCalls(input: CallPlanInput): PlannedCall[] {
  const { run, profile, tools, calls } = input;
  const parsed = calls.map((call) => {
    const tool = agentTool(tools, profile, call.name);
    return { tool, parsed: tool ? parseToolArguments(tool, call.arguments) : undefined };
  });
  // Which call carries out which step of the run's plan; the others are policed as without one.
  const planSteps = linkParsedCallsToPlan(
    run.plan,
    parsed.map((p, i) => (p.parsed?.ok ? { name: calls[i]!.name, args: p.parsed.args } : null)),
  );
  return calls.map((call, index) => {
    const { tool, parsed: args } = parsed[index]!;
    if (!tool || !args) {
      const observation = `Tool "${call.name}" is not available to this agent. Available tools: ${profile.tools.join(', ')}.`;
      return refuse(call, call.arguments, 'unknown_tool', observation);
    }
    if (!args.ok) return refuse(call, call.arguments, 'invalid_arguments', args.problem);
    return planCall(input, index, call, tool, args.args, planSteps[index]);
  });
}

const refuse = (
  call: ModelToolCall,
  args: unknown,
  outcome: Extract<PlannedCall, { kind: 'refuse' }>['outcome'],
  observation: string,
  extra: Planned['extra'] = {},
  warnings: CallWarning[] = [],
): PlannedCall => ({ kind: 'refuse', call, args, outcome, observation, extra, warnings });

function planCall(input: CallPlanInput, index: number, call: ModelToolCall, tool: Tool, args: unknown, planStep?: number): PlannedCall {
  const { run } = input;
  const step = run.step;
  const ctx: CallContext = {
    tenantId: run.tenantId,
    userId: run.userId,
    roles: run.roles,
    runId: run.id,
    step,
    toolCallId: call.id,
    idempotencyKey: idempotencyKey(run.id, step, call.id),
    deadlineMs: Date.parse(run.deadlineAt),
  };
  if (tool.allowedRoles && !run.roles.some((r) => tool.allowedRoles?.includes(r))) {
    const observation = `You are not permitted to use ${tool.name} for this user (needs one of: ${tool.allowedRoles.join(', ')}).`;
    return refuse(call, args, 'forbidden', observation, {}, [
      { msg: "tool call forbidden for the caller's roles", fields: { tool: tool.name } },
    ]);
  }
  let requirement: ReturnType<typeof requirementOf>;
  try {
    requirement = requirementOf(tool, args, ctx);
  } catch (err) {
    // Fails closed: a call whose policy cannot say what it needs does not run.
    return refuse(call, args, 'error', errorObservation(err), {}, [
      { msg: 'approval policy failed', fields: { tool: tool.name, err: thrownMessage(err) } },
    ]);
  }
  const planned = planStep === undefined ? {} : { planStep };
  const runIt = (cover: 'none' | 'approval' | 'plan', extra: Planned['extra'], warnings: CallWarning[] = []) =>
    ({ kind: 'run', call, args, tool, ctx, cover, extra, warnings }) as const;
  if (!requirement) return runIt('none', planned);
  const warnings: CallWarning[] = [];
  // A call carrying out a step of the approved plan runs on the plan's approval (same tool, same arguments by hash),
  // while that approval still binds it; else it is asked for on its own, as if off the plan.
  if (planStep !== undefined && run.plan?.status === 'approved' && run.plan.approvalId) {
    const problem = planCoverProblem(run.plan, planStep, tool, requirement);
    if (!problem) return runIt('plan', { ...planned, approvalId: run.plan.approvalId });
    warnings.push({
      msg: 'plan approval binding refused',
      fields: { tool: tool.name, approvalId: run.plan.approvalId, planStep, problem },
    });
  }

  const id = approvalId(run.id, step, index);
  const gated = { approvalId: id };
  const approval = input.approvals.find((a) => a.id === id);
  const base = { call, args, extra: gated, warnings, approvalDecision: approval?.status ?? 'pending' } as const;
  const waiting = `Waiting for human approval (${id}).`;
  if (!approval) {
    const escalate = firstEscalation(requirement.requiredRole, requirement.escalate, input.escalation ?? {});
    const newApproval: Approval = {
      schemaVersion: 1,
      id,
      runId: run.id,
      step,
      toolCallId: call.id,
      tenantId: run.tenantId,
      requestedBy: run.userId,
      toolName: tool.name,
      arguments: args,
      argsHash: hashArguments(args),
      policyVersion: tool.policyVersion ?? 1,
      summary: requirement.summary,
      risk: requirement.risk,
      requiredRole: requirement.requiredRole,
      status: 'pending',
      createdAt: new Date(input.now).toISOString(),
      expiresAt: new Date(input.now + (tool.approvalTtlMs ?? input.approvalTtlMs)).toISOString(),
      ...(requirement.quorum !== undefined ? { quorum: requirement.quorum } : {}),
      ...(escalate ? { escalate } : {}),
    };
    return { ...base, kind: 'await_approval', observation: waiting, newApproval };
  }
  const rejected = (observation: string): PlannedCall => ({ ...base, kind: 'refuse', outcome: 'rejected', observation });
  switch (approval.status) {
    case 'pending':
      return { ...base, kind: 'await_approval', observation: waiting };
    case 'approved': {
      const binding = verifyBinding(tool, approval, ctx);
      if (!binding.ok) {
        warnings.push({ msg: 'approval binding refused', fields: { tool: tool.name, approvalId: id, problem: binding.problem } });
        return rejected(`Not executed: ${binding.problem}.`);
      }
      // The approved arguments run (an approver may have edited them); the model is told what changed.
      const resultPrefix =
        approval.editedBy === undefined
          ? undefined
          : `Approved by ${approval.decidedBy} with edited arguments ${JSON.stringify(binding.args)} (you proposed ${JSON.stringify(approval.arguments)}). Result: `;
      return { ...base, kind: 'run', args: binding.args, tool, ctx, cover: 'approval', ...(resultPrefix ? { resultPrefix } : {}) };
    }
    case 'rejected':
      return rejected(`Not executed: rejected by ${approval.decidedBy}: ${approval.comment ?? 'no reason given'}`);
    case 'expired':
      return rejected(`Not executed: nobody decided before the approval expired at ${approval.expiresAt}.`);
    case 'withdrawn':
      return rejected('Not executed: the approval was withdrawn.');
  }
}
