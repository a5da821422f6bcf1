import { createHash } from 'node:crypto';
import type { Limits, RunRecord, TreeUsage, Versioning } from '@rein/contract';

/**
 * The pure rules of a tree of runs: a child's id, its record and limits, what its end
 * tells the parent's model, and how the tree's budget bounds each run of it. No I/O: the
 * child is created by engine/child-runs.ts, the tree's spending read by the store.
 */

/**
 * A child's id: the same for every attempt at the parent's step (a crash never creates two),
 * and shaped like any run id (no `.` or `:`, which approval and job ids use as separators).
 */
export function childRunId(parentId: string, step: number, toolCallId: string): string {
  const h = createHash('sha256').update(`${parentId}\u0000${step}\u0000${toolCallId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** How deep a run sits in its tree: 0 for a root, 1 for its children, … */
export const depthOf = (run: Pick<RunRecord, 'ancestors'>) => run.ancestors?.length ?? 0;

/**
 * A child's limits: its agent's, capped to its share of what the parent has left (tokens,
 * money; time is not shared). `parent` comes bounded by its tree (boundedByTree), and the
 * children a step starts together split what is left evenly: each spends within its own
 * limits, so parallel children together never spend more than the tree has left (a
 * maximum, not a race between their budget checks).
 */
export function childLimits(parent: RunRecord, agentLimits: Limits, now: number, siblings = 1): Limits {
  const share = Math.max(1, siblings);
  const tokensLeft = Math.max(1, Math.floor((parent.limits.maxTokens - parent.usage.totalTokens) / share));
  const msLeft = Math.max(1_000, Date.parse(parent.deadlineAt) - now);
  const costLeft = parent.limits.maxCostUsd === undefined ? undefined : Math.max(1e-9, (parent.limits.maxCostUsd - parent.costUsd) / share);
  const cost = [agentLimits.maxCostUsd, costLeft].filter((c): c is number => c !== undefined);
  return {
    maxSteps: agentLimits.maxSteps,
    maxTokens: Math.min(agentLimits.maxTokens, tokensLeft),
    timeoutMs: Math.min(agentLimits.timeoutMs, msLeft),
    ...(cost.length ? { maxCostUsd: Math.min(...cost) } : {}),
  };
}

/** A new child run (queued): the parent's tenant, user, roles, trace and app version; its place in the tree. */
export function childRecord(
  parent: RunRecord,
  child: { id: string; agent: string; input: string; limits: Limits; traceparent?: string; versioning?: Versioning },
  now: number,
): RunRecord {
  const at = new Date(now).toISOString();
  const deadline = Math.min(now + child.limits.timeoutMs, Date.parse(parent.deadlineAt));
  const traceparent = child.traceparent ?? parent.traceparent;
  return {
    schemaVersion: 1,
    id: child.id,
    traceId: parent.traceId,
    ...(traceparent ? { traceparent } : {}),
    tenantId: parent.tenantId,
    userId: parent.userId,
    roles: parent.roles,
    agent: child.agent,
    input: child.input,
    metadata: {},
    limits: child.limits,
    status: 'queued',
    step: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    costUsd: 0,
    pendingApprovals: [],
    // A child runs on its parent's version (the tools and agents the parent was started with); its own agent says whether it upgrades.
    ...(parent.appVersion ? { appVersion: parent.appVersion } : {}),
    ...(child.versioning === 'upgrade' ? { versioning: 'upgrade' as const } : {}),
    parentRunId: parent.id,
    parentStep: parent.step,
    rootRunId: parent.rootRunId ?? parent.id,
    ancestors: [...(parent.ancestors ?? []), parent.id],
    version: 0,
    createdAt: at,
    updatedAt: at,
    deadlineAt: new Date(deadline).toISOString(),
  };
}

/** What the parent's model is told of an ended child: its output, its answer, or `{error: "subagent_failed", reason}`. */
export function childObservation(child: RunRecord | null): { outcome: 'ok' | 'error'; observation: string } {
  if (child?.status === 'succeeded') {
    return { outcome: 'ok', observation: child.output !== undefined ? JSON.stringify(child.output) : (child.finalAnswer ?? '') };
  }
  const reason = child ? (child.reason ?? child.status) : 'not_found';
  return { outcome: 'error', observation: JSON.stringify({ error: 'subagent_failed', reason }) };
}

export const ZERO_TREE_USAGE: TreeUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 };

/** A run's own spending plus its descendants' (each descendant's total, as charged to the tree), overshot if any of them did. */
export function treeTotal(run: Pick<RunRecord, 'usage' | 'costUsd' | 'overshot'>, descendants: readonly TreeUsage[]): TreeUsage {
  return descendants.reduce(
    (sum, d) => ({
      promptTokens: sum.promptTokens + d.promptTokens,
      completionTokens: sum.completionTokens + d.completionTokens,
      totalTokens: sum.totalTokens + d.totalTokens,
      costUsd: sum.costUsd + d.costUsd,
      ...(sum.overshot || d.overshot ? { overshot: true as const } : {}),
    }),
    { ...run.usage, costUsd: run.costUsd, ...(run.overshot ? { overshot: true as const } : {}) },
  );
}

/** A run of the tree whose limits bound a run below it (or itself): its limits and what its tree spent. */
export interface TreeBound {
  limits: Limits;
  spent: TreeUsage;
}

/**
 * The run with its token and cost limits lowered to what every bound (itself with its
 * descendants, and each ancestor with its tree) has left, so that the step's budget check
 * and the completion's `max_tokens` (I6) hold for the tree. Only for those checks: the
 * run's stored limits do not change. A bound whose tree overshot (a reply past its call's
 * `max_tokens`) has nothing left, so no run of that tree calls the model again.
 */
export function boundedByTree(run: RunRecord, bounds: readonly TreeBound[]): RunRecord {
  if (bounds.length === 0) return run;
  // A tree where a reply spent past its cap has nothing left: every budget in it was a guess the provider ignored.
  const tokensLeft = Math.min(...bounds.map((b) => (b.spent.overshot ? 0 : b.limits.maxTokens - b.spent.totalTokens)));
  const maxTokens = Math.min(run.limits.maxTokens, run.usage.totalTokens + Math.max(0, tokensLeft));
  const costBounds = bounds.filter((b) => b.limits.maxCostUsd !== undefined);
  const costLeft = costBounds.length ? Math.min(...costBounds.map((b) => (b.limits.maxCostUsd as number) - b.spent.costUsd)) : undefined;
  const maxCostUsd =
    costLeft === undefined
      ? run.limits.maxCostUsd
      : Math.min(run.limits.maxCostUsd ?? Number.POSITIVE_INFINITY, run.costUsd + Math.max(0, costLeft));
  return { ...run, limits: { ...run.limits, maxTokens, ...(maxCostUsd !== undefined ? { maxCostUsd } : {}) } };
}
