import type { StepRecord } from '../schemas/run.js';
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

/** What a committed step adds to the counters; read from its records, so an attempt whose commit lost adds nothing. */
export interface CommitFacts extends RecordFacts {
  approvalsCreated: ApprovalFact[];
}

/**
 * The tool calls of a committed step record: an answer reused from an earlier step counts as
 * `snapshot`; a name the fleet does not know counts as `unknown` (a model's typo must not mint labels).
 */
export function recordFacts(step: StepRecord | undefined, known: (name: string) => boolean): RecordFacts {
  const calls = step?.toolCalls ?? [];
  return {
    toolCalls: calls.map((r) => ({ tool: known(r.name) ? r.name : 'unknown', outcome: r.fromSnapshot ? 'snapshot' : r.outcome })),
    effectsUncertain: calls.filter((r) => r.outcome === 'uncertain' && !r.fromSnapshot).map((r) => r.name),
  };
}

/** Everything a committed Transition counts (pure). */
export function commitFacts(t: Transition, known: (name: string) => boolean): CommitFacts {
  return {
    ...recordFacts(t.change.step, known),
    approvalsCreated: t.kind === 'park' ? t.newApprovals.map((a) => ({ tool: a.toolName, risk: a.risk })) : [],
  };
}
