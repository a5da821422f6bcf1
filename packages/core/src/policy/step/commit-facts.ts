import type { Approval } from '@rein/contract';
import { type RunRecord, type StepRecord, TERMINAL_STATUSES } from '@rein/contract';
import { CALL_PREFIX, TRANSFER_PREFIX } from '@rein/define/internal';
import type { Transition } from './step-policy.js';

export interface ToolCallFact {
  tool: string;
  outcome: string;
}

export interface ApprovalFact {
  tool: string;
  risk: string;
}

/** What a committed step record adds to the counters. */
export interface RecordFacts {
  toolCalls: ToolCallFact[];
  /** Tools whose effect is neither recorded as done nor as failed (one entry per call). */
  effectsUncertain: string[];
}

export interface DecisionFact {
  tool: string;
  risk: string;
  decision: string;
  /** From the approval's request to its decision. */
  waitedMs: number;
  tenantId: string;
  /** Who decided it; none for an expiry. */
  decidedBy?: string;
}

/** How long a team means to take for a decision, and how a decider is named on a label. */
export interface ApprovalLoadSettings {
  slaMs: number;
  decider: (tenantId: string, userId: string) => string;
}

/** Whether a person decided the approval within the SLA (pure): an expiry never is. */
export const metSla = (f: Pick<DecisionFact, 'decision' | 'waitedMs'>, slaMs: number): boolean =>
  (f.decision === 'approved' || f.decision === 'rejected') && f.waitedMs <= slaMs;

/**
 * A decider's label (pure): a user of the static keys (REIN_API_KEYS, a list an operator
 * wrote, so bounded) by their user id; anyone else — company sign-in, whose people are as
 * many as the company has — as `company`, so no sign-in can mint a label.
 */
export function deciderLabels(keys: readonly { tenantId: string; userId: string }[]) {
  const known = new Set(keys.map((k) => `${k.tenantId}\u0000${k.userId}`));
  return (tenantId: string, userId: string): string => (known.has(`${tenantId}\u0000${userId}`) ? userId : 'company');
}

export interface FinishFact {
  agent: string;
  status: string;
  reason: string;
}

/** What a commit adds to the counters; read from what it wrote, so an attempt whose commit lost adds nothing. */
export interface CommitFacts extends RecordFacts {
  approvalsCreated: ApprovalFact[];
  approvalsDecided: DecisionFact[];
}

/**
 * The tool calls of a committed step record: an answer reused from an earlier step counts as
 * `snapshot`; a name the fleet does not know counts as `unknown` (a model's typo must not mint labels).
 */
export function recordFacts(step: StepRecord | undefined, known: (name: string) => boolean): RecordFacts {
  const calls = step?.toolCalls ?? [];
  return {
    // A replay's call that reached no tool counts by where its answer came from (recorded, not_recorded, simulated).
    toolCalls: calls.map((r) => ({
      tool: known(r.name) ? r.name : 'unknown',
      outcome: r.fromSnapshot ? 'snapshot' : r.source && r.source !== 'live' ? r.source : r.outcome,
    })),
    effectsUncertain: calls.filter((r) => r.outcome === 'uncertain' && !r.fromSnapshot).map((r) => r.name),
  };
}

/**
 * The names the counters keep (pure): the app's tools, and the sub-agent and hand-off
 * tools (`call_<agent>`, `transfer_to_<agent>`) that name one of its agents — as bounded
 * as the tools. Any other name a model wrote counts as `unknown`.
 */
export function knownToolNames(tools: { has(name: string): boolean }, agents: { has(name: string): boolean }) {
  return (name: string): boolean =>
    tools.has(name) || [CALL_PREFIX, TRANSFER_PREFIX].some((prefix) => name.startsWith(prefix) && agents.has(name.slice(prefix.length)));
}

/** Everything a committed Transition counts (pure). */
export function commitFacts(t: Transition, known: (name: string) => boolean): CommitFacts {
  return {
    ...recordFacts(t.change.step, known),
    approvalsCreated: t.kind === 'park' ? t.newApprovals.map((a) => ({ tool: a.toolName, risk: a.risk })) : [],
    approvalsDecided: [],
  };
}

/**
 * What a committed change other than a step counts (pure): the approvals a decision (or an
 * expiry) decided, the one a saga's plan asks for. A cancel's or an upgrade's withdrawn approvals are not decisions.
 */
export function changeFacts(
  kind: 'start' | 'decide' | 'cancel' | 'compensate' | 'admit' | 'upgrade' | 'raise',
  approvals: Approval[],
  now: number,
): CommitFacts {
  return {
    toolCalls: [],
    effectsUncertain: [],
    approvalsCreated: kind === 'compensate' ? approvals.map((a) => ({ tool: a.toolName, risk: a.risk })) : [],
    approvalsDecided:
      kind === 'decide'
        ? approvals
            .filter((a) => a.status !== 'pending')
            .map((a) => ({
              tool: a.toolName,
              risk: a.risk,
              decision: a.status,
              waitedMs: now - Date.parse(a.createdAt),
              tenantId: a.tenantId,
              ...(a.status !== 'expired' && a.decidedBy ? { decidedBy: a.decidedBy } : {}),
            }))
        : [],
  };
}

/** The run's finish, if this commit is the one that finished it (pure). */
export function finishFact(from: RunRecord, next: RunRecord): FinishFact | undefined {
  if (!TERMINAL_STATUSES.includes(next.status) || TERMINAL_STATUSES.includes(from.status)) return undefined;
  return { agent: from.agent, status: next.status, reason: next.reason ?? 'completed' };
}
