import { z } from 'zod';
import { approvalStatusSchema, riskSchema } from './approval.js';
import { tenantRoleSchema } from './identity.js';
import { runReasonSchema, runStatusSchema, toolOutcomeSchema, usageSchema } from './run.js';

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
  /** Its run moved to an app version whose tool changed: the call must be asked again. */
  'approval.withdrawn',
  'approval.escalated',
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

/**
 * The payload of each event type, for clients: a discriminated union on `type`, so
 * `if (e.type === 'tool.result') e.data.observation` type-checks. Payloads are open
 * (a newer server may add fields); the fields listed are the ones Rein writes.
 */
const event = <T extends RunEventType, D extends z.ZodRawShape>(type: T, data: D) =>
  z.object({
    type: z.literal(type),
    runId: z.string(),
    step: z.number().int().min(0).optional(),
    at: z.string(),
    data: z.looseObject(data),
  });

export const typedRunEventSchema = z.discriminatedUnion('type', [
  event('run.queued', { agent: z.string(), traceId: z.string(), appVersion: z.string().optional() }),
  event('step.started', {}),
  event('step.finished', {
    /** `answered`, `continued`, `parked`, `output_repair`, `plan_invalid`, `plan_repair`, … */
    outcome: z.string(),
    thought: z.string().nullable().optional(),
    usage: usageSchema.optional(),
  }),
  event('tool.called', { toolCallId: z.string().optional(), name: z.string().optional() }),
  event('model.delta', {
    text: z.string().optional(),
    /** Pieces of tool calls: a piece with `id` and `name` starts a call; the ones after it carry more `arguments`. */
    toolCalls: z
      .array(
        z.object({ index: z.number().int(), id: z.string().optional(), name: z.string().optional(), arguments: z.string().optional() }),
      )
      .optional(),
  }),
  event('tool.result', {
    toolCallId: z.string(),
    name: z.string(),
    arguments: z.unknown(),
    outcome: toolOutcomeSchema,
    /** A preview; the trace keeps the whole observation. */
    observation: z.string(),
  }),
  event('approval.requested', {
    approvalId: z.string(),
    toolName: z.string(),
    summary: z.string().optional(),
    risk: riskSchema.optional(),
  }),
  event('approval.decided', {
    approvalId: z.string(),
    status: approvalStatusSchema,
    decidedBy: z.string().nullable(),
    comment: z.string().nullable(),
    edited: z.boolean(),
  }),
  event('approval.withdrawn', {
    approvalId: z.string(),
    toolName: z.string(),
    reason: z.literal('version_changed'),
    from: z.string().nullable(),
    to: z.string(),
  }),
  event('approval.escalated', { approvalId: z.string(), from: tenantRoleSchema, to: tenantRoleSchema, expiresAt: z.string() }),
  event('run.finished', {
    status: runStatusSchema,
    reason: runReasonSchema,
    finalAnswer: z.string().optional(),
    by: z.string().optional(),
  }),
  event('compensation.started', { round: z.number().int(), status: z.string(), trigger: z.string(), steps: z.number().int() }),
  event('compensation.step', {
    round: z.number().int(),
    status: z.string(),
    tool: z.string(),
    undoTool: z.string(),
    step: z.number().int(),
    toolCallId: z.string(),
    outcome: z.string(),
  }),
  event('compensation.finished', { round: z.number().int(), status: z.string() }),
]);
/** A run event with its payload typed by its `type`. */
export type TypedRunEvent = z.infer<typeof typedRunEventSchema>;
/** The payload of one event type, e.g. `RunEventData<'tool.result'>`. */
export type RunEventData<T extends RunEventType> = Extract<TypedRunEvent, { type: T }>['data'];

/** One entry of a tenant's approval feed (`GET /v1/approvals/events`): ids and statuses only. */
export const approvalFeedEventSchema = z.discriminatedUnion('type', [
  z.object({
    /** `approval.withdrawn`: its run moved to an app version whose tool changed (`reason: version_changed`). */
    type: z.enum(['approval.requested', 'approval.decided', 'approval.withdrawn', 'approval.escalated']),
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
