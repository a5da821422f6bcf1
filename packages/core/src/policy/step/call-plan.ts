import type { Approval, ApprovalStatus, ModelToolCall, RunRecord, ToolCallRecord, ToolOutcome } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import {
  agentTool,
  callArgumentsSchema,
  delegationOf,
  type InputReply,
  parseToolArguments,
  requirementOf,
  type Tool,
  type ToolContext,
  thrownMessage,
  transferArgumentsSchema,
} from '@rein/define/internal';
import type { z } from 'zod';
import { verifyBinding } from '../approvals/approval-binding.js';
import { approvalId } from '../approvals/approval-id.js';
import { approvalRequest } from '../approvals/approval-request.js';
import type { EscalationDefaults } from '../approvals/escalation.js';
import { idempotencyKey } from './call-identity.js';
import { lastQuestion, replyTo } from './input-approvals.js';
import { linkParsedCallsToPlan, planCoverProblem } from './plan.js';
import { childRunId, depthOf } from './sub-agents.js';
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
  extra: Pick<ToolCallRecord, 'planStep' | 'approvalId' | 'childRunId'>;
  warnings: CallWarning[];
  /** The state of the call's own approval, when it is gated by one (a span attribute). */
  approvalDecision?: ApprovalStatus;
}

export type PlannedCall =
  /**
   * Run it: on no approval (`none`), its own approved one (`approval`), or the approved plan's (`plan`);
   * `reply`: a person's reply to the question the call asked last (input-approvals.ts), which it goes on from.
   */
  | (Planned & {
      kind: 'run';
      tool: Tool;
      ctx: CallContext;
      cover: 'none' | 'approval' | 'plan';
      resultPrefix?: string;
      reply?: InputReply;
    })
  /** Do not run it: the observation tells the model why. */
  | (Planned & {
      kind: 'refuse';
      outcome: Exclude<ToolOutcome, 'ok' | 'uncertain' | 'repeated' | 'awaiting_approval' | 'awaiting_child'>;
      observation: string;
    })
  /** Park the step on its approval; `newApproval` is the approval to ask for when none exists yet. */
  | (Planned & { kind: 'await_approval'; observation: string; newApproval?: Approval })
  /** `call_<agent>`: start (or find) the child run `childId` of `agent` with `input`; its end is the observation. */
  | (Planned & { kind: 'spawn'; agent: string; input: string; childId: string; ctx: CallContext })
  /** `transfer_to_<agent>`: the run goes on with `agent` (the first transfer of a reply wins). */
  | (Planned & { kind: 'transfer'; agent: string });

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
  /** REIN_MAX_AGENT_DEPTH and REIN_MAX_CHILDREN_PER_STEP. */
  delegation?: DelegationLimits;
}

export interface DelegationLimits {
  /** A run this deep in its tree (a root is 0) starts no child. */
  maxDepth: number;
  maxChildrenPerStep: number;
}

export const DEFAULT_DELEGATION_LIMITS: DelegationLimits = { maxDepth: 3, maxChildrenPerStep: 4 };

/** The record of a call that is not run. */
export function plannedRecord(p: Extract<PlannedCall, { kind: 'refuse' | 'await_approval' }>): ToolCallRecord {
  const outcome = p.kind === 'refuse' ? p.outcome : 'awaiting_approval';
  return { id: p.call.id, name: p.call.name, arguments: p.args, outcome, observation: p.observation, durationMs: 0, ...p.extra };
}

/** The record of a hand-off: the run goes on with `agent`. */
export function transferRecord(p: Extract<PlannedCall, { kind: 'transfer' }>): ToolCallRecord {
  const observation = `Transferred to the "${p.agent}" agent.`;
  return { id: p.call.id, name: p.call.name, arguments: p.args, outcome: 'ok', observation, durationMs: 0, ...p.extra };
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
  const limits = input.delegation ?? DEFAULT_DELEGATION_LIMITS;
  let children = 0;
  let transferred = false;
  return calls.map((call, index) => {
    const delegation = delegationOf(profile, call.name);
    if (delegation?.kind === 'transfer') {
      const args = parseJson(call.arguments, transferArgumentsSchema);
      if (!args.ok) return refuse(call, call.arguments, 'invalid_arguments', args.problem);
      if (transferred) return refuse(call, args.value, 'rejected', 'Not executed: this reply already handed the conversation over.');
      transferred = true;
      return { kind: 'transfer', call, args: args.value, agent: delegation.agent, extra: {}, warnings: [] };
    }
    if (delegation?.kind === 'call') {
      const args = parseJson(call.arguments, callArgumentsSchema);
      if (!args.ok) return refuse(call, call.arguments, 'invalid_arguments', args.problem);
      if (depthOf(run) + 1 > limits.maxDepth)
        return refuse(call, args.value, 'forbidden', `Not started: sub-agents may nest at most ${limits.maxDepth} deep.`);
      if (++children > limits.maxChildrenPerStep)
        return refuse(
          call,
          args.value,
          'forbidden',
          `Not started: one step may start at most ${limits.maxChildrenPerStep} sub-agent runs.`,
        );
      const childId = childRunId(run.id, run.step, call.id);
      return {
        kind: 'spawn',
        call,
        args: args.value,
        agent: delegation.agent,
        input: args.value.input,
        childId,
        ctx: callContext(run, call),
        extra: { childRunId: childId },
        warnings: [],
      };
    }
    const { tool, parsed: args } = parsed[index]!;
    if (!tool || !args) {
      const observation = `Tool "${call.name}" is not available to this agent. Available tools: ${profile.tools.join(', ')}.`;
      return refuse(call, call.arguments, 'unknown_tool', observation);
    }
    if (!args.ok) return refuse(call, call.arguments, 'invalid_arguments', args.problem);
    return withReply(input, index, planCall(input, index, call, tool, args.args, planSteps[index]));
  });
}

/** A call that asked a person a question runs again once it is decided, with the reply; until then it waits. */
function withReply(input: CallPlanInput, index: number, planned: PlannedCall): PlannedCall {
  if (planned.kind !== 'run') return planned;
  const asked = lastQuestion(input.run, input.approvals, index);
  if (!asked) return planned;
  const reply = replyTo(planned.tool, asked, planned.ctx);
  const id = asked.approval.id;
  const extra = { ...planned.extra, approvalId: id };
  if (reply === 'pending') {
    const { call, args, warnings } = planned;
    const observation = `Waiting for a person to answer ${call.name}'s question (${id}).`;
    return { kind: 'await_approval', call, args, extra, warnings, approvalDecision: 'pending', observation };
  }
  return { ...planned, extra, reply, approvalDecision: asked.approval.status };
}

const refuse = (
  call: ModelToolCall,
  args: unknown,
  outcome: Extract<PlannedCall, { kind: 'refuse' }>['outcome'],
  observation: string,
  extra: Planned['extra'] = {},
  warnings: CallWarning[] = [],
): PlannedCall => ({ kind: 'refuse', call, args, outcome, observation, extra, warnings });

/** A call's arguments as JSON checked by `schema`, or why not. */
function parseJson<T>(raw: string, schema: z.ZodType<T>): { ok: true; value: T } | { ok: false; problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw || '{}');
  } catch {
    return { ok: false, problem: 'Invalid arguments: not JSON.' };
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    problem: `Invalid arguments: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
  };
}

const callContext = (run: RunRecord, call: ModelToolCall): CallContext => ({
  tenantId: run.tenantId,
  userId: run.userId,
  roles: run.roles,
  runId: run.id,
  agent: run.agent,
  step: run.step,
  toolCallId: call.id,
  idempotencyKey: idempotencyKey(run.id, run.step, call.id),
  deadlineMs: Date.parse(run.deadlineAt),
});

function planCall(input: CallPlanInput, index: number, call: ModelToolCall, tool: Tool, args: unknown, planStep?: number): PlannedCall {
  const { run } = input;
  const step = run.step;
  const ctx = callContext(run, call);
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
    const newApproval = approvalRequest({
      run,
      id,
      toolCallId: call.id,
      tool,
      args,
      requirement,
      now: input.now,
      approvalTtlMs: input.approvalTtlMs,
      ...(input.escalation ? { escalation: input.escalation } : {}),
    });
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
      return rejected(
        approval.reason === 'version_changed'
          ? `Not executed: the app moved to a new version in which ${tool.name} changed, so its approval was withdrawn. Call it again if it is still needed (it will be judged, and approved, under the new definition).`
          : 'Not executed: the approval was withdrawn.',
      );
  }
}
