import { z } from 'zod';
import { riskSchema, tenantRoleSchema } from './identity.js';
import { runStatusSchema, terminalStatusSchema, usageSchema } from './run.js';

/** `POST /v1/runs/:id/replay`: what the replay overrides; the rest is the original's. */
export const replayRunBodySchema = z
  .object({
    model: z.string().min(1).max(200).optional(),
    instructions: z.string().min(1).max(100_000).optional(),
    /** The app version to replay on (default: the current one). */
    version: z.string().min(1).max(64).optional(),
    /** Run read tools the original never called (default: they answer `not_recorded`). */
    liveReads: z.boolean().optional(),
    /** A call the original never had approved: treated as rejected with reason `replay` (default), or the replay stops. */
    onNewApproval: z.enum(['reject', 'stop']).optional(),
  })
  .strict();
export type ReplayRunBody = z.infer<typeof replayRunBodySchema>;

/** `POST /v1/runs/:id/replay` and `/fork` answer the new run. */
export const replayStartedSchema = z.object({
  id: z.string(),
  replayOf: z.string().optional(),
  forkOf: z.string().optional(),
  status: runStatusSchema,
});
export type ReplayStarted = z.infer<typeof replayStartedSchema>;

/** `POST /v1/runs/:id/fork`: a live run with the original's history up to (not including) step `fromStep`. */
export const forkRunBodySchema = z
  .object({
    fromStep: z.number().int().min(0).max(1000),
    /** A user message added after that history (the step then starts from it). */
    input: z.string().trim().min(1).max(8000).optional(),
  })
  .strict();
export type ForkRunBody = z.infer<typeof forkRunBodySchema>;

/** One tool call as a diff shows it: arguments compared by canonical hash. */
export const diffCallSchema = z.object({
  step: z.number().int().min(0),
  name: z.string(),
  arguments: z.unknown(),
  argsHash: z.string(),
  outcome: z.string(),
  source: z.string().optional(),
});
export type DiffCall = z.infer<typeof diffCallSchema>;

const diffStepSideSchema = z.object({ thought: z.string().nullable(), calls: z.array(diffCallSchema) }).nullable();

/** `GET /v1/runs/:id/diff` (of a replay): structure first (tool sequence, arguments by hash), text second. */
export const runDiffSchema = z.object({
  replayOf: z.string(),
  identical: z.boolean(),
  /** The trace step `index` where the replay first differs in structure (tools, arguments, or ending); null when none. */
  divergedAtStep: z.number().int().min(0).nullable(),
  steps: z.array(z.object({ index: z.number().int().min(0), original: diffStepSideSchema, replay: diffStepSideSchema, same: z.boolean() })),
  toolCalls: z.object({
    added: z.array(diffCallSchema),
    removed: z.array(diffCallSchema),
    changedArguments: z.array(z.object({ step: z.number().int().min(0), name: z.string(), original: z.unknown(), replay: z.unknown() })),
  }),
  approvals: z.object({
    original: z.array(z.object({ step: z.number().int().min(0), toolName: z.string(), status: z.string(), risk: riskSchema })),
    wouldNeed: z.array(
      z.object({
        step: z.number().int().min(0),
        toolName: z.string(),
        arguments: z.unknown(),
        risk: riskSchema,
        requiredRole: tenantRoleSchema,
      }),
    ),
  }),
  usage: z.object({ original: usageSchema, replay: usageSchema }),
  costUsd: z.object({ original: z.number(), replay: z.number() }),
  finalAnswer: z.object({ original: z.string().nullable(), replay: z.string().nullable(), same: z.boolean() }),
  output: z.object({ same: z.boolean() }),
  /** The replay's own status (a diff of an unfinished replay is partial). */
  status: runStatusSchema,
});
export type RunDiff = z.infer<typeof runDiffSchema>;

/** `POST /v1/replays`: replay up to `limit` finished runs of `agent` created in [since, until), sampled evenly. */
export const createReplayCohortBodySchema = z
  .object({
    agent: z.string().min(1).max(64),
    since: z.string().datetime({ offset: true }),
    until: z.string().datetime({ offset: true }).optional(),
    limit: z.number().int().min(1).max(500),
    status: terminalStatusSchema.optional(),
    model: z.string().min(1).max(200).optional(),
    instructions: z.string().min(1).max(100_000).optional(),
    version: z.string().min(1).max(64).optional(),
    /** Replays run at once (default 4). */
    concurrency: z.number().int().min(1).max(32).optional(),
    /** Tokens the whole cohort may spend; replays not started once it is spent are skipped (default 1,000,000). */
    maxTokens: z.number().int().min(1).max(100_000_000).optional(),
  })
  .strict();
export type CreateReplayCohortBody = z.infer<typeof createReplayCohortBodySchema>;

/** One run of a cohort. */
export const cohortEntrySchema = z.object({
  original: z.string(),
  replay: z.string().optional(),
  state: z.enum(['pending', 'running', 'done', 'skipped']),
  identical: z.boolean().optional(),
  divergedAtStep: z.number().int().min(0).nullable().optional(),
  /** How it diverged at that step, in a line. */
  divergence: z.string().optional(),
  wouldNeedApprovals: z.number().int().min(0).optional(),
  /** The original succeeded and the replay did not. */
  nowFails: z.boolean().optional(),
});
export type CohortEntry = z.infer<typeof cohortEntrySchema>;

/** `GET /v1/replays/:id`: progress and summary. */
export const replayCohortViewSchema = z.object({
  id: z.string(),
  agent: z.string(),
  status: z.enum(['running', 'finished']),
  createdAt: z.string(),
  settings: z.object({ model: z.string().optional(), instructions: z.string().optional(), version: z.string().optional() }),
  summary: z.object({
    total: z.number().int(),
    replayed: z.number().int(),
    identical: z.number().int(),
    diverged: z.number().int(),
    skipped: z.number().int(),
    wouldNeedApprovals: z.number().int(),
    nowFail: z.number().int(),
    tokens: z.object({ original: z.number(), replay: z.number() }),
    costUsd: z.object({ original: z.number(), replay: z.number() }),
  }),
  runs: z.array(cohortEntrySchema),
});
export type ReplayCohortView = z.infer<typeof replayCohortViewSchema>;
