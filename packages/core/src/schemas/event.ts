import { z } from 'zod';

export const runEventTypeSchema = z.enum([
  'run.queued',
  'step.started',
  'step.finished',
  'tool.called',
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
