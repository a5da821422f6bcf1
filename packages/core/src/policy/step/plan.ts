import type { Approval } from '@rein/contract';
import { type PlanStep, planStepSchema, type RunPlan, type RunRecord } from '@rein/contract';
import type { PlanOptions } from '@rein/define/internal';
import { type ApprovalRequirement, parseToolArguments, requirementOf, type Tool, type ToolContext } from '@rein/define/internal';
import { z } from 'zod';
import { InvalidRequestError, ToolError } from '../../shared/errors.js';
import { hashArguments } from '../app/argument-hash.js';
import { toolDigest } from '../app/tool-digest.js';
import { exceeds, stricterOf } from '../approvals/approval-binding.js';
import { approvalId } from '../approvals/approval-id.js';
import { governanceOf } from '../approvals/governance.js';
import { idempotencyKey } from './call-identity.js';
import type { PlanOutcome } from './step-policy.js';

/**
 * Plan, then execute: a plan-mode agent's first model call returns a plan (structured
 * output) that is checked against the agent's tools here, shown to a person as one
 * approval when it holds a write or a high-risk step, and then followed. Pure functions:
 * validation, the approval a plan needs, an approver's edits, and whether a call is on
 * the approved plan (drift detection by canonical arguments hash).
 */

/** The plan options an agent declares live with the definition API. */
export { type PlanOptions, planOptionsSchema } from '@rein/define/internal';

/** Name of the plan approval's "tool" (metrics, console); no tool may be called so. */
export const PLAN_APPROVAL = 'plan';

/** The response_format a planning call asks for: steps whose action is one of the agent's tools. */
export function planResponseFormat(toolNames: readonly string[], opts: PlanOptions) {
  return {
    name: 'plan',
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['steps'],
      properties: {
        steps: {
          type: 'array',
          minItems: opts.minSteps,
          maxItems: opts.maxSteps,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['step', 'action', 'args', 'desc', 'risk'],
            properties: {
              step: { type: 'integer', minimum: 1 },
              action: { type: 'string', enum: [...toolNames] },
              args: { type: 'object' },
              desc: { type: 'string' },
              risk: { type: 'string', enum: ['low', 'high'] },
            },
          },
        },
      },
    },
  };
}

export type PlanCheck = { ok: true; steps: PlanStep[] } | { ok: false; problems: string[] };

const issuesOf = (error: z.ZodError) => error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');

/**
 * The model's plan, checked whatever the provider promised about structured output:
 * JSON of the plan's shape, a step count within bounds, steps numbered 1..n, only the
 * agent's tools, and each step's arguments valid for its tool (kept as the tool parses them).
 */
export function validatePlan(content: string | null, tools: ReadonlyMap<string, Tool>, opts: PlanOptions): PlanCheck {
  let json: unknown;
  try {
    json = JSON.parse(content ?? '');
  } catch {
    return { ok: false, problems: ['the reply is not JSON; answer with {"steps": [...]} only'] };
  }
  const parsed = z
    .object({ steps: z.array(planStepSchema) })
    .strict()
    .safeParse(json);
  if (!parsed.success) return { ok: false, problems: [issuesOf(parsed.error)] };
  const { steps } = parsed.data;
  const problems: string[] = [];
  if (steps.length < opts.minSteps || steps.length > opts.maxSteps) {
    problems.push(`a plan has ${opts.minSteps} to ${opts.maxSteps} steps, this one has ${steps.length}`);
  }
  const checked = steps.map((s, i) => {
    if (s.step !== i + 1) problems.push(`steps are numbered 1..n in order; step ${i + 1} says ${s.step}`);
    const tool = tools.get(s.action);
    if (!tool) {
      problems.push(`step ${s.step}: "${s.action}" is not one of your tools (${[...tools.keys()].join(', ')})`);
      return s;
    }
    const args = tool.parameters.safeParse(s.args);
    if (!args.success) {
      problems.push(`step ${s.step}: arguments do not match ${tool.name}: ${issuesOf(args.error)}`);
      return s;
    }
    return { ...s, args: args.data as Record<string, unknown> };
  });
  return problems.length ? { ok: false, problems } : { ok: true, steps: checked };
}

/**
 * What approving the plan needs: nothing when every step is a low-risk read; otherwise
 * one approval at least as strict as each step's own tool policy would ask for.
 */
export function planRequirement(
  steps: readonly PlanStep[],
  tools: ReadonlyMap<string, Tool>,
  ctx: Omit<ToolContext, 'signal' | 'logger'>,
): ApprovalRequirement | null {
  let needed: ApprovalRequirement | null = null;
  for (const s of steps) {
    const tool = tools.get(s.action);
    if (!tool) continue;
    const own = requirementOf(tool, s.args, ctx);
    if (!own && s.risk === 'low' && tool.kind === 'read') continue;
    const step = own ?? { risk: 'high' as const, requiredRole: 'approver' as const, summary: '' };
    needed = needed ? stricterOf(needed, step) : step;
  }
  if (!needed) return null;
  const summary = `Plan of ${steps.length} steps: ${steps.map((s) => `${s.step}. ${s.action} — ${s.desc}`).join('; ')}`;
  return { ...needed, summary };
}

/**
 * An approver's edits of individual steps (`{"<step>": args}`): each validated by its
 * tool's schema and judged again by its policy; the plan's requirement never gets less strict.
 */
export function editPlan(
  steps: readonly PlanStep[],
  edits: Record<string, unknown>,
  current: ApprovalRequirement,
  tools: ReadonlyMap<string, Tool>,
  ctx: Omit<ToolContext, 'signal' | 'logger'>,
): { steps: PlanStep[]; requirement: ApprovalRequirement } {
  let requirement = current;
  const edited = steps.map((s) => ({ ...s }));
  for (const [key, args] of Object.entries(edits)) {
    const s = edited.find((x) => String(x.step) === key);
    const tool = s ? tools.get(s.action) : undefined;
    if (!s || !tool) throw new InvalidRequestError(`the plan has no step ${key}`, 'invalid_arguments');
    const parsed = tool.parameters.safeParse(args);
    if (!parsed.success)
      throw new InvalidRequestError(
        `step ${key}: edited arguments do not match ${tool.name}: ${issuesOf(parsed.error)}`,
        'invalid_arguments',
      );
    s.args = parsed.data as Record<string, unknown>;
    requirement = stricterOf(requirement, requirementOf(tool, s.args, ctx));
  }
  return { steps: edited, requirement: { ...requirement, summary: current.summary } };
}

/** The plan's binding: the canonical hash of its steps, as for a tool call's arguments. */
export const planHash = (steps: readonly PlanStep[]) => hashArguments(steps);

/**
 * What the approver of a plan saw of its tools, as one hash: the digest of each step's
 * tool (tools/tool-digest.ts), in step order; undefined when a step's tool is gone. A plan
 * approval records it, so an upgrade keeps the approval only if every step's tool is unchanged.
 */
export function planDigest(steps: readonly PlanStep[], tools: ReadonlyMap<string, Tool>): string | undefined {
  const digests = steps.map((s) => tools.get(s.action));
  if (digests.some((t) => t === undefined)) return undefined;
  return hashArguments(digests.map((t) => toolDigest(t as Tool)));
}

/** The steps a plan approval stands for: as the approver edited them, else as asked; null if they do not parse. */
export function approvedPlanSteps(approval: Approval): PlanStep[] | null {
  const parsed = z.object({ steps: z.array(planStepSchema) }).safeParse(approval.approvedArguments ?? approval.arguments);
  return parsed.success ? parsed.data.steps : null;
}

/**
 * The plan step a call carries out — same tool, same arguments by canonical hash, not
 * yet carried out (nor taken by an earlier call of the same step) — or undefined: the
 * call leaves the plan and is policed exactly as without one.
 */
export function planStepOf(plan: RunPlan | undefined, tool: string, args: unknown, taken: ReadonlySet<number>): number | undefined {
  if (!plan || plan.status === 'pending_approval' || plan.status === 'rejected') return undefined;
  const hash = hashArguments(args);
  return plan.steps.find((s) => s.action === tool && !plan.done.includes(s.step) && !taken.has(s.step) && hashArguments(s.args) === hash)
    ?.step;
}

/**
 * Why the approved plan does not cover a call carrying out its step `planStep`, or null if
 * it does. A plan step is bound like a single approval: judged by the version of its tool's
 * policy the approver saw, and needing no more than the approval granted, as the policy
 * judges the call now. A call the plan does not cover asks for an approval of its own.
 */
export function planCoverProblem(plan: RunPlan, planStep: number, tool: Tool, requirement: ApprovalRequirement): string | null {
  if (plan.status !== 'approved' || !plan.granted) return 'the plan has no approval bound to its policies';
  if (plan.policyVersions?.[String(planStep)] !== (tool.policyVersion ?? 1)) {
    return `the approval policy of ${tool.name} changed after the plan's approval was asked for`;
  }
  if (exceeds(requirement, plan.granted)) {
    const asked = (r: { risk: string; requiredRole: string; quorum?: number }) =>
      `${r.risk}/${r.requiredRole}${r.quorum ? `/quorum ${r.quorum}` : ''}`;
    return `${tool.name} now needs ${asked(requirement)}, more than the plan's approval granted (${asked(plan.granted)})`;
  }
  return null;
}

/**
 * Drift detection for one step's calls: the plan step each call carries out, or
 * undefined for a call that leaves the plan. Two calls never carry out the same step.
 */
export function linkCallsToPlan(
  plan: RunPlan | undefined,
  calls: ReadonlyArray<{ name: string; arguments: string }>,
  toolOf: (name: string) => Tool | undefined,
): Array<number | undefined> {
  return linkParsedCallsToPlan(
    plan,
    calls.map((call) => {
      const tool = toolOf(call.name);
      const parsed = tool ? parseToolArguments(tool, call.arguments) : null;
      return parsed?.ok ? { name: call.name, args: parsed.args } : null;
    }),
  );
}

/** linkCallsToPlan for arguments already parsed (null: a call with no tool or no valid arguments). */
export function linkParsedCallsToPlan(
  plan: RunPlan | undefined,
  calls: ReadonlyArray<{ name: string; args: unknown } | null>,
): Array<number | undefined> {
  const taken = new Set<number>();
  return calls.map((call) => {
    const step = call ? planStepOf(plan, call.name, call.args, taken) : undefined;
    if (step !== undefined) taken.add(step);
    return step;
  });
}

/** Whether the run is still planning: a plan-mode run with no plan yet, or one waiting for its approval. */
export const isPlanning = (plan: PlanOptions | undefined, run: RunRecord) =>
  plan !== undefined && (!run.plan || run.plan.status === 'pending_approval');

export interface PlanFacts {
  run: RunRecord;
  /** The planning reply's text (the plan as JSON). */
  content: string | null;
  /** The agent's tools (the plan may use nothing else). */
  tools: ReadonlyMap<string, Tool>;
  options: PlanOptions;
  /** The approvals of this step, as read. */
  approvals: readonly Approval[];
  now: number;
  approvalTtlMs: number;
}

const stepsJson = (steps: readonly PlanStep[]) => JSON.stringify(steps.map(({ step, action, args }) => ({ step, action, args })));

/** The plan once its approval is decided: approved (as edited) → followed; anything else → the model is told. */
function decided(f: PlanFacts, plan: RunPlan): PlanOutcome {
  const approval = f.approvals.find((a) => a.id === plan.approvalId);
  const by = approval?.decidedBy ?? 'nobody';
  if (approval?.status === 'approved') {
    const steps = approvedPlanSteps(approval);
    if (steps && planHash(steps) === approval.argsHash) {
      const edited = approval.editedBy !== undefined ? ` with edits by ${approval.editedBy}` : '';
      return {
        kind: 'proceed',
        plan: {
          steps,
          status: 'approved',
          approvalId: approval.id,
          decidedBy: by,
          done: [],
          ...(plan.policyVersions ? { policyVersions: plan.policyVersions } : {}),
          granted: { risk: approval.risk, requiredRole: approval.requiredRole, ...(approval.quorum ? { quorum: approval.quorum } : {}) },
        },
        note: `Your plan was approved by ${by}${edited}. Carry out exactly these steps, in order, with exactly these arguments (other calls need approvals of their own): ${stepsJson(steps)}`,
      };
    }
  }
  const why =
    approval?.status === 'rejected'
      ? `rejected by ${by}: ${approval.comment ?? 'no reason given'}`
      : approval?.status === 'expired'
        ? 'nobody decided before its approval expired'
        : approval?.status === 'withdrawn' && approval.reason === 'version_changed'
          ? 'the app moved to a new version in which tools of the plan changed, so its approval was withdrawn'
          : 'its approval does not match the plan';
  return {
    kind: 'proceed',
    plan: { ...plan, status: 'rejected', decidedBy: by },
    note: `Your plan was not approved (${why}). Do not carry it out. Tell the user; any write you still make needs its own approval.`,
  };
}

const digestOf = (steps: readonly PlanStep[], tools: ReadonlyMap<string, Tool>) => {
  const digest = planDigest(steps, tools);
  return digest === undefined ? {} : { toolDigest: digest };
};

/** The planning step's outcome: repair, fail, park for the plan's one approval, or go on with the plan. */
export function planOutcome(f: PlanFacts): PlanOutcome {
  if (f.run.plan?.status === 'pending_approval') return decided(f, f.run.plan);
  const check = validatePlan(f.content, f.tools, f.options);
  if (!check.ok) return f.run.step === 0 ? { kind: 'repair', problems: check.problems } : { kind: 'invalid', problems: check.problems };
  const { run } = f;
  const ctx = {
    tenantId: run.tenantId,
    userId: run.userId,
    roles: run.roles,
    runId: run.id,
    agent: run.agent,
    step: run.step,
    toolCallId: PLAN_APPROVAL,
    idempotencyKey: idempotencyKey(run.id, run.step, PLAN_APPROVAL),
  };
  let requirement: ApprovalRequirement | null;
  try {
    requirement = planRequirement(check.steps, f.tools, ctx);
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    const problems = [err.message];
    return f.run.step === 0 ? { kind: 'repair', problems } : { kind: 'invalid', problems };
  }
  if (!requirement) {
    return {
      kind: 'proceed',
      plan: { steps: check.steps, status: 'accepted', done: [] },
      note: `Your plan is accepted (no step needs approval). Carry it out step by step: ${stepsJson(check.steps)}`,
    };
  }
  const id = approvalId(run.id, run.step, 0);
  const approval: Approval = {
    schemaVersion: 1,
    id,
    kind: 'plan',
    runId: run.id,
    step: run.step,
    toolCallId: PLAN_APPROVAL,
    tenantId: run.tenantId,
    requestedBy: run.userId,
    toolName: PLAN_APPROVAL,
    arguments: { steps: check.steps },
    argsHash: planHash(check.steps),
    policyVersion: 1,
    ...digestOf(check.steps, f.tools),
    // Its steps' strictest governance (a quorum included): no step runs on less than its own approval would ask.
    // A step's context describes that step's arguments, not the plan's: the plan shows its steps instead.
    ...governanceOf({ ...requirement, context: undefined }, {}),
    status: 'pending',
    createdAt: new Date(f.now).toISOString(),
    expiresAt: new Date(f.now + f.approvalTtlMs).toISOString(),
  };
  // The policy each step is judged by now, as its approval shows it: a call runs on the plan only under the same.
  const policyVersions = Object.fromEntries(check.steps.map((s) => [String(s.step), f.tools.get(s.action)?.policyVersion ?? 1]));
  return { kind: 'park', plan: { steps: check.steps, status: 'pending_approval', approvalId: id, done: [], policyVersions }, approval };
}
