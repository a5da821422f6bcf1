import { z } from 'zod';

export const runEventTypeSchema = z.enum([
  'run.queued',
  'step.started',
  'step.finished',
  'tool.called',
  /** Live only: pieces of the model's reply as it is written (text, tool-call arguments), batched. */
  'model.delta',
  'tool.result',
  'approval.requested',
  'approval.decided',
  'run.finished',
  'compensation.started',
  'compensation.step',
  'compensation.finished',
]);
export type RunEventType = z.infer<typeof runEventTypeSchema>;

/** One entry of a run's event stream (Redis Stream; the entry id is the SSE id). */
export const runEventSchema = z.object({
  type: runEventTypeSchema,
  runId: z.string(),
  step: z.number().int().min(0).optional(),
  at: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type RunEvent = z.infer<typeof runEventSchema>;

/** One entry of a tenant's approval feed (`GET /v1/approvals/events`): ids and statuses only. */
export const approvalFeedEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.enum(['approval.requested', 'approval.decided']),
    approvalId: z.string(),
    runId: z.string(),
    status: z.string(),
    at: z.string(),
  }),
  /** A write whose outcome is unknown after a crash (I4): a human must reconcile it. */
  z.object({
    type: z.literal('effect.uncertain'),
    runId: z.string(),
    step: z.number().int(),
    toolCallId: z.string(),
    tool: z.string(),
    at: z.string(),
  }),
]);
export type ApprovalFeedEvent = z.infer<typeof approvalFeedEventSchema>;
