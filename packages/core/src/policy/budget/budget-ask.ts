import type { Approval, BudgetRaise } from '@rein/contract';
import { budgetRaiseSchema, type Limits, limitsSchema, type RunReason, type RunRecord } from '@rein/contract';
import { hashArguments } from '../app/argument-hash.js';
import { approvalId } from '../approvals/approval-id.js';

/**
 * Budgets that ask (`defineAgent({ onBudget: 'ask' })`): a run out of its token or cost
 * budget parks with one approval of kind `budget` proposing more, from the run's pace;
 * approved (maybe with edited amounts) its limits grow and it goes on, refused or expired
 * it fails as it would have. Pure: the step processor reads, this decides, the applier
 * commits. A tenant's daily quota is a different limit (`tenant_quota`) and never asks.
 */

/** The budget approval's "tool" name (metrics, console, the audit log); no tool may be called so. */
export const BUDGET_APPROVAL = 'budget';

/**
 * The budget approval's place in its step's approval ids: past any tool call's index, so
 * that the calls of the step it lets run (same step, after the raise) get ids of their own.
 */
const BUDGET_INDEX = 1_000_000;

/** How many more steps at the run's pace a proposal pays for (at most the steps it has left). */
const STEPS_AHEAD = 3;

/** The reasons a person may answer with more budget; the others (deadline, steps, quota) fail as always. */
const ASKABLE: readonly RunReason[] = ['token_budget', 'cost_budget'];

/** What a run out of budget does at this step. */
export type BudgetVerdict =
  /** Not out of budget (or not an agent that asks): the step goes on as usual. */
  | { kind: 'go' }
  /** Fails with `reason`, as without asking (or because the answer was no). */
  | { kind: 'fail'; reason: RunReason }
  /** Parks for a person: the approval proposes more. */
  | { kind: 'ask'; approval: Approval; reason: RunReason }
  /** The step's budget approval was approved: the limits grow by `raise`, then the step goes on. */
  | { kind: 'raise'; raise: BudgetRaise };

/** The step's budget approval, if it asked for one. */
export const budgetApprovalOf = (run: RunRecord, approvals: readonly Approval[]) =>
  approvals.find((a) => a.kind === 'budget' && a.step === run.step);

/**
 * What the step does about its budget: `exhausted` is why it cannot go on (or null), `ask`
 * whether its agent asks. A step's budget approval is asked once: granted, it raises the
 * limits (only while the run is still parked on it, so a retry never raises twice); refused
 * or expired, the run fails. `fourEyes` (REIN_BUDGET_FOUR_EYES): its requester may not
 * grant it, even as proposed.
 */
export function budgetVerdict(
  run: RunRecord,
  approvals: readonly Approval[],
  exhausted: RunReason | null,
  ask: boolean,
  now: number,
  ttlMs: number,
  fourEyes = true,
): BudgetVerdict {
  const asked = budgetApprovalOf(run, approvals);
  if (asked && run.status === 'pending_approval') {
    if (asked.status === 'approved') return { kind: 'raise', raise: budgetRaiseSchema.parse(asked.approvedArguments ?? asked.arguments) };
    if (asked.status !== 'pending') return { kind: 'fail', reason: exhausted ?? 'token_budget' };
  }
  if (!exhausted) return { kind: 'go' };
  // A sub-agent's budget is its tree's, bounded by its ancestors: raising its own limits would not help.
  if (!ask || !ASKABLE.includes(exhausted) || run.ancestors?.length || asked) return { kind: 'fail', reason: exhausted };
  const approval = budgetApproval(run, exhausted, proposeRaise(run), now, ttlMs);
  return { kind: 'ask', reason: exhausted, approval: fourEyes ? { ...approval, fourEyes } : approval };
}

/** The most a raise may hold (`budgetRaiseSchema`): a proposal past it could not be granted as proposed. */
const RAISE_MAX = {
  extraTokens: budgetRaiseSchema.shape.extraTokens.maxValue ?? Number.MAX_SAFE_INTEGER,
  extraCostUsd: budgetRaiseSchema.shape.extraCostUsd.maxValue ?? Number.MAX_SAFE_INTEGER,
};

/**
 * More budget at the run's pace: what it overshot, plus what its average step spent so far
 * for the next few steps (a first step's pace is its whole budget). Cost is proposed only
 * for a run with a cost limit.
 */
export function proposeRaise(run: RunRecord): BudgetRaise {
  const steps = Math.max(1, run.step);
  const ahead = Math.max(1, Math.min(STEPS_AHEAD, run.limits.maxSteps - run.step));
  const tokenPace = run.step > 0 ? run.usage.totalTokens / steps : run.limits.maxTokens;
  const extraTokens = Math.min(
    Math.ceil(Math.max(0, run.usage.totalTokens - run.limits.maxTokens) + tokenPace * ahead),
    RAISE_MAX.extraTokens,
  );
  const maxCost = run.limits.maxCostUsd;
  if (maxCost === undefined) return { extraTokens, extraCostUsd: 0 };
  const costPace = run.step > 0 ? run.costUsd / steps : maxCost;
  const extraCostUsd = Math.min(Math.ceil((Math.max(0, run.costUsd - maxCost) + costPace * ahead) * 1e6) / 1e6, RAISE_MAX.extraCostUsd);
  return { extraTokens, extraCostUsd };
}

/** A run's token limit never grows past what its record may hold (a larger one could not be stored). */
const MAX_TOKENS_CEILING = limitsSchema.shape.maxTokens.maxValue ?? Number.MAX_SAFE_INTEGER;

/**
 * The run's limits grown by a granted raise (a cost raise of a run without a cost limit adds
 * none), the token limit up to its ceiling.
 */
export function raisedLimits(limits: Limits, raise: BudgetRaise): Limits {
  return {
    ...limits,
    maxTokens: Math.min(limits.maxTokens + raise.extraTokens, MAX_TOKENS_CEILING),
    ...(limits.maxCostUsd !== undefined ? { maxCostUsd: limits.maxCostUsd + raise.extraCostUsd } : {}),
  };
}

function budgetApproval(run: RunRecord, reason: RunReason, raise: BudgetRaise, now: number, ttlMs: number): Approval {
  const spent =
    reason === 'cost_budget'
      ? `$${run.costUsd.toFixed(4)} of its $${run.limits.maxCostUsd} cost budget`
      : `${run.usage.totalTokens} of its ${run.limits.maxTokens} tokens`;
  return {
    schemaVersion: 1,
    id: approvalId(run.id, run.step, BUDGET_INDEX),
    kind: 'budget',
    runId: run.id,
    ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
    ...(run.rootRunId ? { rootRunId: run.rootRunId } : {}),
    step: run.step,
    toolCallId: BUDGET_APPROVAL,
    tenantId: run.tenantId,
    requestedBy: run.userId,
    toolName: BUDGET_APPROVAL,
    arguments: raise,
    argsHash: hashArguments(raise),
    policyVersion: 1,
    summary: `Run of ${run.agent} used ${spent} after ${run.step} steps; grant ${raise.extraTokens} more tokens${
      run.limits.maxCostUsd !== undefined ? ` and $${raise.extraCostUsd} more` : ''
    } to let it go on`,
    risk: 'high',
    requiredRole: 'approver',
    status: 'pending',
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + ttlMs).toISOString(),
  };
}
