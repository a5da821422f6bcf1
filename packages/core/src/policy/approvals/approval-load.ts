import type { Approval, ApprovalLoad } from '@rein/contract';
import { metSla } from '../step/commit-facts.js';

/** The nearest-rank percentile of sorted values (pure). */
const percentile = (sorted: readonly number[], p: number): number => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? 0;

/**
 * The load `approvals` (asked for in the window `from`–`to`, ms) put on their deciders (pure):
 * the same measures as the metrics (`rein_approval_wait_seconds`, `rein_approval_sla_total`,
 * `rein_approval_decisions_by_decider_total`), but per person whoever they signed in as,
 * since this answer reaches only the tenant's own overseers.
 */
export function approvalLoad(
  approvals: readonly Approval[],
  window: { from: number; to: number; slaMs: number },
): Omit<ApprovalLoad, 'truncated'> {
  const waited = (a: Approval) => Date.parse(a.decidedAt ?? '') - Date.parse(a.createdAt);
  const decided = approvals.filter((a) => (a.status === 'approved' || a.status === 'rejected') && a.decidedAt);
  const expired = approvals.filter((a) => a.status === 'expired');
  const byKind = new Map<string, number[]>();
  for (const a of decided) byKind.set(`${a.toolName}\u0000${a.risk}`, [...(byKind.get(`${a.toolName}\u0000${a.risk}`) ?? []), waited(a)]);
  const byDecider = new Map<string, number>();
  for (const a of decided) if (a.decidedBy) byDecider.set(a.decidedBy, (byDecider.get(a.decidedBy) ?? 0) + 1);
  const hours = Math.max(1, window.to - window.from) / 3_600_000;
  const ended = decided.length + expired.length;
  const within = decided.filter((a) => metSla({ decision: a.status, waitedMs: waited(a) }, window.slaMs)).length;
  return {
    from: new Date(window.from).toISOString(),
    to: new Date(window.to).toISOString(),
    slaMs: window.slaMs,
    asked: approvals.length,
    pending: approvals.filter((a) => a.status === 'pending').length,
    expired: expired.length,
    decided: decided.length,
    withinSla: ended ? within / ended : null,
    timeToDecision: [...byKind]
      .map(([key, times]) => {
        const [tool = '', risk = ''] = key.split('\u0000');
        const sorted = [...times].sort((x, y) => x - y);
        return { tool, risk, decided: sorted.length, p50Ms: percentile(sorted, 0.5), p95Ms: percentile(sorted, 0.95) };
      })
      .sort((x, y) => y.decided - x.decided || x.tool.localeCompare(y.tool)),
    deciders: [...byDecider]
      .map(([userId, n]) => ({ userId, decided: n, perHour: n / hours }))
      .sort((x, y) => y.decided - x.decided || x.userId.localeCompare(y.userId)),
  };
}
