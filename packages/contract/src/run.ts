import { z } from 'zod';
import { appVersionSchema, versioningSchema } from './app-version.js';
import { principalSchema, riskSchema, tenantRoleSchema } from './identity.js';
import { modelToolCallSchema } from './message.js';
import { ENDINGS, RUN_STATUSES } from './run-status.js';

/** Persisted records carry a schema version; readers accept only these. */
export const SUPPORTED_SCHEMA_VERSIONS = [1] as const;
export const SCHEMA_VERSION = 1;
const schemaVersion = z.literal(SCHEMA_VERSION);

export { RUN_STATUSES, TERMINAL_STATUSES } from './run-status.js';

export const runStatusSchema = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof runStatusSchema>;
/** The statuses a run ends in (`run-status.ts`, the one list). */
export const terminalStatusSchema = runStatusSchema.extract(ENDINGS);
export type TerminalStatus = z.infer<typeof terminalStatusSchema>;

/** Why a run ended; stable strings that dashboards and clients match on. */
export const runReasonSchema = z.enum([
  'completed',
  'max_steps',
  'token_budget',
  'deadline',
  'repeated_call',
  'tool_failures',
  'model_unavailable',
  'model_reply_invalid',
  'output_invalid',
  'cost_budget',
  'tenant_quota',
  'input_rejected',
  'plan_invalid',
  'cancelled',
  /** Cancelled because a new run of its session interrupted it (`ifBusy: interrupt | rollback`). */
  'interrupted',
  /** A replay stopped at a call the original never had approved (`onNewApproval: 'stop'`). */
  'replay_stopped',
  'internal_error',
]);
export type RunReason = z.infer<typeof runReasonSchema>;

export const planStepSchema = z
  .object({
    step: z.number().int().min(1),
    action: z.string().min(1),
    args: z.record(z.string(), z.unknown()),
    desc: z.string().min(1).max(500),
    risk: z.enum(['low', 'high']),
  })
  .strict();
export type PlanStep = z.infer<typeof planStepSchema>;

/** A plan-mode run's plan: its steps (as approved), its decision, and the steps already carried out. */
export const runPlanSchema = z.object({
  steps: z.array(planStepSchema),
  status: z.enum(['accepted', 'pending_approval', 'approved', 'rejected']),
  approvalId: z.string().optional(),
  decidedBy: z.string().optional(),
  /** Plan steps a tool call has carried out; each is carried out once. */
  done: z.array(z.number().int()),
  /** By plan step: the policy version of its tool when the plan was made, i.e. what its approval was judged by. */
  policyVersions: z.record(z.string(), z.number().int()).optional(),
  /** What the plan's approval required (as decided, edits included): no call of the plan runs on it if it needs more. */
  granted: z.object({ risk: riskSchema, requiredRole: tenantRoleSchema, quorum: z.number().int().min(2).optional() }).optional(),
});
export type RunPlan = z.infer<typeof runPlanSchema>;

export const limitsSchema = z.object({
  maxSteps: z.number().int().min(1).max(100),
  maxTokens: z.number().int().min(1).max(10_000_000),
  timeoutMs: z
    .number()
    .int()
    .min(1_000)
    .max(24 * 3600_000),
  maxCostUsd: z.number().positive().optional(),
});
export type Limits = z.infer<typeof limitsSchema>;

export const usageSchema = z.object({
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  totalTokens: z.number().int().min(0),
});
export type Usage = z.infer<typeof usageSchema>;
export const ZERO_USAGE: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/**
 * What the loop guard needs from a run's history, kept on the run and advanced by each
 * committed step: per call signature, how often it was asked for and where its last
 * successful result is; per tool, its current streak of failures.
 */
export const loopGuardStateSchema = z.object({
  calls: z.record(z.string(), z.object({ n: z.number().int().min(1), ok: z.tuple([z.number().int().min(0), z.string()]).optional() })),
  failures: z.record(z.string(), z.number().int().min(0)),
});
export type LoopGuardState = z.infer<typeof loopGuardStateSchema>;

export const interruptionSchema = z.object({ by: z.string(), rollback: z.boolean() });
export type Interruption = z.infer<typeof interruptionSchema>;

/**
 * What a replay run overrides and how it treats what its original never did: `liveReads`
 * runs read tools the original never called; `onNewApproval` says whether a call the
 * original never had approved is treated as rejected (reason `replay`) or stops the replay.
 */
export const replaySettingsSchema = z.object({
  model: z.string().min(1).max(200).optional(),
  instructions: z.string().min(1).max(100_000).optional(),
  liveReads: z.boolean(),
  onNewApproval: z.enum(['reject', 'stop']),
});
export type ReplaySettings = z.infer<typeof replaySettingsSchema>;

export const runRecordSchema = z.object({
  schemaVersion,
  id: z.string(),
  /** W3C trace id (32 hex) shared by every span, log line and job of the run. */
  traceId: z.string(),
  /** The run's root trace context (the submit span): jobs enqueued outside a step (resume, repair) continue it. */
  traceparent: z.string().optional(),
  tenantId: principalSchema.shape.tenantId,
  userId: principalSchema.shape.userId,
  roles: principalSchema.shape.roles,
  agent: z.string(),
  /** The app version that runs its steps (set at creation; moved only by an upgrade). Absent on runs created before versions. */
  appVersion: appVersionSchema.optional(),
  /** Its agent's `versioning` when it was created: `upgrade` follows the current version at each step. */
  versioning: versioningSchema.optional(),
  input: z.string(),
  sessionId: z.string().optional(),
  /** How many of the run's first messages are its session's earlier turns (they precede its input). */
  historyMessages: z.number().int().min(0).optional(),
  /** Waiting for its session (`ifBusy` enqueue, interrupt, rollback): the run it was queued behind. No messages until it starts. */
  queuedBehind: z.string().optional(),
  /** Interrupted by a new run of its session: which one, and whether its writes are rolled back (its turn then leaves the session). */
  interruption: interruptionSchema.optional(),
  metadata: z.record(z.string(), z.unknown()),
  limits: limitsSchema,
  status: runStatusSchema,
  reason: runReasonSchema.optional(),
  finalAnswer: z.string().optional(),
  /** The final answer parsed by the agent's `output` schema, when it declares one. */
  output: z.unknown().optional(),
  /** Repair turns given for an answer that did not match the agent's `output` schema. */
  outputRepairs: z.number().int().min(0).optional(),
  /** The step the next job will run (== number of committed steps). */
  step: z.number().int().min(0),
  usage: usageSchema,
  /** Money spent on model calls, from the configured price table. */
  costUsd: z.number().min(0),
  pendingApprovals: z.array(z.string()),
  /** When the run last parked; time parked does not count against its deadline. */
  parkedAt: z.string().optional(),
  /** Absent on runs committed before it was kept: rebuilt from their steps on first use. */
  guard: loopGuardStateSchema.optional(),
  /** Plan mode: the plan the run follows (see engine/plan.ts). */
  plan: runPlanSchema.optional(),
  /** Content hashes of the system prompts and tool lists its snapshots refer to, stored once per run (store/decision-journal.ts). */
  snapshotBlobs: z.array(z.string()).optional(),
  /** A sub-agent's run: the run whose tool call started it, and the step of that call. */
  parentRunId: z.string().optional(),
  parentStep: z.number().int().min(0).optional(),
  /** The first run of the tree (absent on a run that is its own root). */
  rootRunId: z.string().optional(),
  /** Every ancestor, root first, parent last: whose budgets bound this run and whose trees it is charged to. */
  ancestors: z.array(z.string()).optional(),
  /** A reply of this run spent past its call's `max_tokens`: its tree (every run bounded with it) spends no more. */
  overshot: z.literal(true).optional(),
  /** A `waiting` run's children of its current step that have not all ended. */
  pendingChildren: z.array(z.string()).optional(),
  /** A replay (`POST /v1/runs/:id/replay`): its tool calls never reach the world, see engine/replay-policy.ts. */
  mode: z.literal('replay').optional(),
  /** A replay's original run, and what the replay overrides. */
  replayOf: z.string().optional(),
  replay: replaySettingsSchema.optional(),
  /** A replay started by a cohort (`POST /v1/replays`): its finish starts the cohort's next one. */
  cohortId: z.string().optional(),
  /** A fork (`POST /v1/runs/:id/fork`): the run whose history up to `forkStep` it started from. */
  forkOf: z.string().optional(),
  forkStep: z.number().int().min(0).optional(),
  /** Bumped by every commit; the compare-and-set token. */
  version: z.number().int().min(0),
  createdAt: z.string(),
  updatedAt: z.string(),
  deadlineAt: z.string(),
});
export type RunRecord = z.infer<typeof runRecordSchema>;

/** The model's reply for one step, journaled before any tool runs (I3). Not an approver's verdict: that is `ApprovalVerdict`. */
export const journaledReplySchema = z.object({
  schemaVersion,
  step: z.number().int().min(0),
  model: z.string(),
  content: z.string().nullable(),
  toolCalls: z.array(modelToolCallSchema),
  usage: z.object({ promptTokens: z.number().int().min(0), completionTokens: z.number().int().min(0) }),
  /** The call's `max_tokens`: a completion above it is an overshoot (a provider that ignores the cap). Absent on replies journaled before it was kept. */
  maxTokens: z.number().int().min(1).optional(),
  durationMs: z.number().min(0),
  createdAt: z.string(),
});
export type JournaledReply = z.infer<typeof journaledReplySchema>;

/**
 * The model-written summary of a step's older turns (`context.summarize: 'model'`), journaled
 * before the step's own model call: a retry of the step reuses it, so it is asked for and
 * paid once. Its usage is charged with the step's reply.
 */
export const journaledSummarySchema = z.object({
  schemaVersion,
  step: z.number().int().min(0),
  model: z.string(),
  text: z.string(),
  usage: z.object({ promptTokens: z.number().int().min(0), completionTokens: z.number().int().min(0) }),
  createdAt: z.string(),
});
export type JournaledSummary = z.infer<typeof journaledSummarySchema>;
/** Earlier names of `journaledReplySchema` / `JournaledReply`, kept while code still uses them. */
export const decisionSchema = journaledReplySchema;
export type Decision = JournaledReply;

export const toolOutcomeSchema = z.enum([
  'ok',
  'error',
  'invalid_arguments',
  'unknown_tool',
  'forbidden',
  'awaiting_approval',
  'rejected',
  'uncertain',
  'repeated',
  'awaiting_child',
]);
export type ToolOutcome = z.infer<typeof toolOutcomeSchema>;

export const toolCallRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.unknown(),
  outcome: toolOutcomeSchema,
  observation: z.string(),
  durationMs: z.number().min(0),
  approvalId: z.string().optional(),
  /** Answered from this run's earlier identical call instead of calling the back end again. */
  fromSnapshot: z.boolean().optional(),
  /** The step of the run's approved plan this call carried out. */
  planStep: z.number().int().min(1).optional(),
  /** A `call_<agent>` call: the child run it started (its steps are that run's trace). */
  childRunId: z.string().optional(),
  /**
   * A replay's call: `recorded` (the original's result), `not_recorded` (a read the original
   * never made), `simulated` (a write not executed), `live` (a read run with `liveReads`).
   */
  source: z.enum(['recorded', 'not_recorded', 'simulated', 'live']).optional(),
  /** A replay's call the original never had approved: what its approval would have required. */
  wouldNeedApproval: z.object({ risk: riskSchema, requiredRole: tenantRoleSchema }).optional(),
});
export type ToolCallRecord = z.infer<typeof toolCallRecordSchema>;

export const stepRecordSchema = z.object({
  schemaVersion,
  index: z.number().int().min(0),
  /** The agent that took the step (a hand-off changes it mid-run); absent on records written before it was kept. */
  agent: z.string().optional(),
  model: z.string(),
  thought: z.string().nullable(),
  toolCalls: z.array(toolCallRecordSchema),
  usage: usageSchema,
  costUsd: z.number().min(0),
  durationMs: z.number().min(0),
  finishedAt: z.string(),
  /** The app version whose worker ran the step: where it differs from the step before, the run changed version. */
  appVersion: appVersionSchema.optional(),
});
export type StepRecord = z.infer<typeof stepRecordSchema>;

/** What a write-tool effect looks like in the ledger (I4). */
export const effectSchema = z.discriminatedUnion('state', [
  /** `handle`: what the call remembered of the work it started elsewhere (a remote task id), to find it again after a crash. */
  z.object({ state: z.literal('intent'), tool: z.string(), at: z.string(), handle: z.string().optional() }),
  z.object({ state: z.literal('done'), tool: z.string(), at: z.string(), ok: z.boolean(), observation: z.string() }),
]);
export type Effect = z.infer<typeof effectSchema>;

/**
 * A decision snapshot: exactly what was sent to the model and what came back, kept
 * (with a TTL) so a step can be replayed and debugged. Readable by admins only. This is
 * the shape written and read; it is stored compactly (see `storedSnapshotSchema`).
 */
export const snapshotSchema = z.object({
  schemaVersion,
  step: z.number().int().min(0),
  at: z.string(),
  request: z.object({
    model: z.string(),
    messages: z.array(z.unknown()),
    tools: z.array(z.string()),
    /** The tool list exactly as sent (OpenAI `tools[]`); absent in snapshots taken without it. */
    toolSpecs: z.array(z.record(z.string(), z.unknown())).optional(),
    maxTokens: z.number(),
    timeoutMs: z.number(),
    /** The agent's output schema as sent in `response_format` (json_schema), if it was. */
    responseFormat: z.object({ name: z.string(), schema: z.record(z.string(), z.unknown()) }).optional(),
    /** Sent with `stream: true` (the reply is the chunks assembled). */
    stream: z.boolean().optional(),
  }),
  reply: z.unknown(),
});
export type Snapshot = z.infer<typeof snapshotSchema>;

/**
 * How a snapshot is stored since schema version 2: the request's history as a range of
 * the run's message log, its system prompt and tool list by content hash (kept once per
 * run), plus the messages the log does not hold. Version 1 stored every request whole,
 * so a run's snapshots held its history once per step.
 */
export const storedSnapshotSchema = z.object({
  schemaVersion: z.literal(2),
  step: z.number().int().min(0),
  at: z.string(),
  model: z.string(),
  maxTokens: z.number(),
  timeoutMs: z.number(),
  responseFormat: z.object({ name: z.string(), schema: z.record(z.string(), z.unknown()) }).optional(),
  stream: z.boolean().optional(),
  /** Content hash of the leading system message's text, if the request had one. */
  system: z.string().optional(),
  /** `[from, to)` of the run's message log that followed the system message. */
  log: z.tuple([z.number().int().min(0), z.number().int().min(0)]),
  /** Request messages after the log range, stored as sent. */
  extra: z.array(z.unknown()),
  /**
   * A second `[from, to)` of the log, after `extra`: a prompt whose older turns were
   * summarised is the log's head, the summary, then the log's recent turns.
   */
  tail: z.tuple([z.number().int().min(0), z.number().int().min(0)]).optional(),
  /** Content hashes of the tool names and, if given, the tool specs. */
  toolNames: z.string(),
  toolSpecs: z.string().optional(),
  reply: z.unknown(),
});
export type StoredSnapshot = z.infer<typeof storedSnapshotSchema>;
