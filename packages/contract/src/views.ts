import { z } from 'zod';
import { approvalContextSchema, approvalSchema } from './approval.js';
import { auditReceiptSchema } from './audit.js';
import { compensationSchema } from './compensation.js';
import { approvalFeedEventSchema } from './event.js';
import { principalSchema, tenantRoleSchema } from './identity.js';
import {
  interruptionSchema,
  limitsSchema,
  runPlanSchema,
  runReasonSchema,
  runStatusSchema,
  snapshotSchema,
  stepRecordSchema,
  toolCallRecordSchema,
  usageSchema,
} from './run.js';

/**
 * What the API answers, as zod schemas: the services' views are typed by them, the
 * OpenAPI document is generated from them and `@rein/client` takes its types from them.
 */

/** Who may decide an approval (what `mayDecide` enforces), so a console can show it. */
export const decisionRightsSchema = z.object({
  role: tenantRoleSchema,
  requester: z.enum(['as_proposed', 'never']),
});

/** An approval as callers see it. */
export const approvalViewSchema = approvalSchema.omit({ schemaVersion: true }).extend({
  deciders: decisionRightsSchema,
  /** A quorum approval's approvals still needed (0 once decided). */
  approvalsNeeded: z.number().int().min(0).optional(),
});
export type ApprovalView = z.infer<typeof approvalViewSchema>;

/** `GET /v1/approvals/:id/context`: what an approver reads beside the call before deciding. */
export const approvalContextViewSchema = z.object({
  approvalId: z.string(),
  runId: z.string(),
  /** The run's input, as the run's readers see it. */
  input: z.string(),
  /** The model's reasoning at the step that proposed the call. */
  thought: z.string().optional(),
  /** The last observations the agent had read before proposing it (each cut to 1000 characters). */
  observations: z.array(z.object({ step: z.number().int(), toolName: z.string(), observation: z.string() })),
  requestedBy: z.string(),
  /** The app's own fields (`approval({...}).context` in `defineTool`). */
  fields: approvalContextSchema.optional(),
  waitedMs: z.number().int().min(0),
  expiresAt: z.string(),
  /** When it escalates, if it still waits then. */
  escalatesAt: z.string().optional(),
});
export type ApprovalContextView = z.infer<typeof approvalContextViewSchema>;

/**
 * `POST /v1/approvals/:id/preview`: the approval as approving with the edit would judge it
 * (risk, required role, quorum), whether the caller may decide it then (`refusal` says why
 * not), and each tool's argument JSON Schema (one, or a plan's tools), for an edit form.
 */
export const approvalPreviewSchema = z.object({
  approval: approvalViewSchema,
  mayDecide: z.boolean(),
  refusal: z.string().optional(),
  parameters: z.record(z.string(), z.record(z.string(), z.unknown())),
});
export type ApprovalPreview = z.infer<typeof approvalPreviewSchema>;

/** A run's saga compensation as callers see it (`POST /v1/runs/:id/compensate`, `compensation` of a run). */
export const compensationViewSchema = compensationSchema.omit({ schemaVersion: true });
export type CompensationView = z.infer<typeof compensationViewSchema>;

/** What a run and its descendants spent together. */
/** `overshot`: a run of the tree spent past a call's `max_tokens`, and the tree spends no more. */
export const treeUsageSchema = usageSchema.extend({ costUsd: z.number().min(0), overshot: z.literal(true).optional() });
export type TreeUsage = z.infer<typeof treeUsageSchema>;

/** `GET /v1/runs/:id` and every other answer that carries a run. */
export const runViewSchema = z.object({
  id: z.string(),
  traceId: z.string(),
  status: runStatusSchema,
  reason: runReasonSchema.optional(),
  agent: z.string(),
  /** The app version its steps run on. */
  appVersion: z.string().optional(),
  input: z.string(),
  sessionId: z.string().optional(),
  /** Waiting for its session to be free: the run it is queued behind. */
  queuedBehind: z.string().optional(),
  /** A new run of its session interrupted it (and, with `rollback`, undid its writes). */
  interruption: interruptionSchema.optional(),
  finalAnswer: z.string().optional(),
  /** The final answer parsed by the agent's `output` schema (agents that declare one). */
  output: z.unknown().optional(),
  step: z.number().int().min(0),
  usage: usageSchema,
  costUsd: z.number().min(0),
  /** A run of a tree (it has a parent or children): its own usage plus every descendant's. */
  treeUsage: treeUsageSchema.optional(),
  /** A sub-agent's run: the run that called it, and the first run of the tree. */
  parentRunId: z.string().optional(),
  rootRunId: z.string().optional(),
  /** A replay (its tool calls never reached the world) and its original; a fork and the run it started from. */
  mode: z.literal('replay').optional(),
  replayOf: z.string().optional(),
  forkOf: z.string().optional(),
  /** The sub-agent runs this run started. */
  children: z.array(z.object({ id: z.string(), agent: z.string(), status: runStatusSchema })).optional(),
  limits: limitsSchema,
  metadata: z.record(z.string(), z.unknown()),
  /** The approvals the run is parked on. */
  pendingApprovals: z.array(approvalViewSchema),
  /** The run's saga compensation, if it has one (`status: failed` is compensation_failed). */
  compensation: compensationViewSchema.optional(),
  /**
   * Its next job (a step, a resume, an undo) belongs to an app version no live worker runs:
   * nothing moves until one starts or an upgrade moves the run. `since`: the later of the
   * run's last change and the last time a worker of that version was seen. Read of one run only.
   */
  waitingForVersion: z.object({ version: z.string(), since: z.string() }).optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
  deadlineAt: z.string(),
});
export type RunView = z.infer<typeof runViewSchema>;

/** A page of `GET /v1/runs`; pass `nextCursor` back as `cursor` for the next one. */
export const runListSchema = z.object({
  runs: z.array(runViewSchema),
  nextCursor: z.string().optional(),
  /** Set on a search (`q`, `from`, `to`): it reads the archive, which holds finished runs only; active runs are listed without one. */
  finishedOnly: z.literal(true).optional(),
});
export type RunList = z.infer<typeof runListSchema>;

/** `GET /v1/sessions/:id`: the session's runs, oldest first. */
export const sessionViewSchema = z.object({ id: z.string(), runs: z.array(runViewSchema) });
export type SessionView = z.infer<typeof sessionViewSchema>;

/** `GET /v1/runs/:id/trace`: every committed step, with the approvals its calls waited for. */
export const runTraceSchema = z.object({
  runId: z.string(),
  traceId: z.string(),
  status: runStatusSchema,
  reason: runReasonSchema.optional(),
  /** The app version the run is on now; each step says which version ran it. */
  appVersion: z.string().optional(),
  input: z.string(),
  /** A sub-agent's run: the run whose call started it (its tool call record names this run as `childRunId`). */
  parentRunId: z.string().optional(),
  rootRunId: z.string().optional(),
  /** Plan mode: the plan, its decision and the steps carried out. */
  plan: runPlanSchema.extend({ approval: approvalViewSchema.optional() }).optional(),
  steps: z.array(
    stepRecordSchema
      .pick({ index: true, agent: true, model: true, thought: true, usage: true, costUsd: true, durationMs: true, appVersion: true })
      .extend({
        toolCalls: z.array(toolCallRecordSchema.extend({ approval: approvalViewSchema.optional() })),
      }),
  ),
  finalAnswer: z.string().nullable(),
  elapsedMs: z.number(),
  totalTokens: z.number().int().min(0),
  costUsd: z.number().min(0),
});
export type RunTrace = z.infer<typeof runTraceSchema>;

/** `GET /v1/runs/:id/snapshots` (admins). */
export const snapshotListSchema = z.object({ runId: z.string(), traceId: z.string(), snapshots: z.array(snapshotSchema) });
export type SnapshotList = z.infer<typeof snapshotListSchema>;

/** A page of `GET /v1/approvals`. */
export const approvalListSchema = z.object({ approvals: z.array(approvalViewSchema), nextCursor: z.string().optional() });
export type ApprovalList = z.infer<typeof approvalListSchema>;

/** `GET /v1/effects/uncertain`: writes whose outcome is unknown, newest first. */
export const uncertainEffectListSchema = z.object({
  effects: z.array(approvalFeedEventSchema.options[1]),
});
export type UncertainEffectList = z.infer<typeof uncertainEffectListSchema>;

/** `GET /v1/me`. */
export const meSchema = principalSchema;

/** Every error answer: `code` is stable (match on it), `message` is for people. */
export const errorEnvelopeSchema = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});

/** One result per id of `POST /v1/approvals/decide`, in the order asked. */
export const batchDecisionSchema = z.object({
  results: z.array(
    z.object({
      id: z.string(),
      ok: z.boolean(),
      approval: approvalViewSchema.optional(),
      /** The decision's signed receipt, when the fleet has an audit key (REIN_AUDIT_SIGNING_KEY). */
      receipt: auditReceiptSchema.optional(),
      error: z.object({ code: z.string(), message: z.string() }).optional(),
    }),
  ),
});
export type BatchDecision = z.infer<typeof batchDecisionSchema>;

/** `GET /v1/approvals/load`: the window read, in hours back from now (at most a week: what Redis keeps of approvals). */
export const approvalLoadQuerySchema = z.object({ hours: z.coerce.number().int().min(1).max(168).default(24) });
export type ApprovalLoadQuery = z.infer<typeof approvalLoadQuerySchema>;

/**
 * The approval load of the caller's tenant over a window (approvals asked for in it): time to
 * decision by tool and risk, decisions per approver per hour, the share decided within the
 * SLA (`REIN_APPROVAL_SLA_MS`), expiries. `truncated`: the window held more approvals than
 * are read (the newest counted).
 */
export const approvalLoadSchema = z.object({
  from: z.string(),
  to: z.string(),
  slaMs: z.number().int().min(0),
  asked: z.number().int().min(0),
  pending: z.number().int().min(0),
  expired: z.number().int().min(0),
  /** Decided by a person (approved or rejected). */
  decided: z.number().int().min(0),
  /** Of the approvals that ended (decided or expired), the share a person decided within the SLA; null when none ended. */
  withinSla: z.number().min(0).max(1).nullable(),
  timeToDecision: z.array(
    z.object({
      tool: z.string(),
      risk: z.string(),
      decided: z.number().int().min(1),
      p50Ms: z.number().min(0),
      p95Ms: z.number().min(0),
    }),
  ),
  deciders: z.array(z.object({ userId: z.string(), decided: z.number().int().min(1), perHour: z.number().min(0) })),
  truncated: z.literal(true).optional(),
});
export type ApprovalLoad = z.infer<typeof approvalLoadSchema>;
