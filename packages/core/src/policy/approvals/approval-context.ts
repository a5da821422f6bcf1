import type { ApprovalContextView, ApprovalView, RunTrace } from '@rein/contract';

/** Observations shown beside an approval: the last few the agent had read when it proposed the call. */
const OBSERVATIONS = 3;
const OBSERVATION_CHARS = 1_000;

/**
 * What an approver needs beside the call (`GET /v1/approvals/:id/context`): the run's
 * input as the run's own readers see it, the thought that proposed the call, the last
 * observations it relied on, who asked, the app's own fields, how long it has waited and
 * when it escalates or expires. Built from the trace, so it shows nothing the trace would not.
 */
export function approvalContext(approval: ApprovalView, trace: RunTrace, now: number): ApprovalContextView {
  const proposing = trace.steps.find((s) => s.index === approval.step);
  const observations = trace.steps
    .filter((s) => s.index < approval.step)
    .flatMap((s) => s.toolCalls.map((c) => ({ step: s.index, toolName: c.name, observation: String(c.observation ?? '') })))
    .slice(-OBSERVATIONS)
    .map((o) => ({ ...o, observation: o.observation.slice(0, OBSERVATION_CHARS) }));
  const escalatesAt = approval.escalate
    ? new Date(Date.parse(approval.escalatedAt ?? approval.createdAt) + approval.escalate.afterMs).toISOString()
    : undefined;
  return {
    approvalId: approval.id,
    runId: approval.runId,
    input: trace.input,
    ...(proposing?.thought ? { thought: proposing.thought } : {}),
    observations,
    requestedBy: approval.requestedBy,
    ...(approval.context ? { fields: approval.context } : {}),
    waitedMs: Math.max(0, now - Date.parse(approval.createdAt)),
    expiresAt: approval.expiresAt,
    ...(escalatesAt && approval.status === 'pending' ? { escalatesAt } : {}),
  };
}
