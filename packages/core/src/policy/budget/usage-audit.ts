import { estimateCompletionTokens } from './token-estimator.js';

/**
 * A reported completion count is believed unless Rein's own count of the reply is more
 * than this many times larger (and by more than the slack): the local count over-counts
 * real tokenizers, so an honest report is never replaced.
 */
export const UNDERREPORT_RATIO = 2;
export const UNDERREPORT_SLACK_TOKENS = 256;

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface AuditedUsage {
  /** What the step is charged: the report, or the local count where the report is not believable. */
  usage: TokenUsage;
  /** Completion tokens the report left out (0 when it is believed). */
  underreportedTokens: number;
}

/**
 * The usage a model reply is charged. Providers (or a proxy in front of one) report
 * usage themselves; a 5 MB answer reported as 5 tokens would defeat token budgets and
 * tenant quotas. So the reply is counted here too and, when the report is far below
 * that count, the count is charged instead.
 */
export function auditUsage(
  reported: TokenUsage,
  reply: { content: string | null; toolCalls: ReadonlyArray<{ name: string; arguments: string }> },
): AuditedUsage {
  const counted = estimateCompletionTokens(reply.content, reply.toolCalls);
  const believable =
    counted <= reported.completionTokens * UNDERREPORT_RATIO || counted - reported.completionTokens <= UNDERREPORT_SLACK_TOKENS;
  if (believable) return { usage: reported, underreportedTokens: 0 };
  return { usage: { ...reported, completionTokens: counted }, underreportedTokens: counted - reported.completionTokens };
}
