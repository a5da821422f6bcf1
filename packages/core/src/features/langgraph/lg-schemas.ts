import { addressableIdSchema, cronSchema, ifBusySchema, timezoneSchema } from '@rein/contract';
import { z } from 'zod';
import { STREAM_MODES } from '../../policy/langgraph/lg-stream.js';

/**
 * The LangGraph API's request bodies as the SDK sends them. Fields the SDK sends that
 * change nothing here are accepted and ignored; fields that would ask for something Rein
 * does not do are listed in `REFUSED_RUN_FIELDS` and refused by name.
 */

const metadata = z.record(z.string(), z.unknown()).nullish();
const page = { limit: z.number().int().min(1).max(1000).default(10), offset: z.number().int().min(0).max(100_000).default(0) };

export const assistantSearchSchema = z.object({
  graph_id: z.string().max(64).nullish(),
  name: z.string().max(64).nullish(),
  metadata,
  ...page,
});

export const threadCreateSchema = z.object({
  thread_id: addressableIdSchema.nullish(),
  metadata,
  if_exists: z.enum(['raise', 'do_nothing']).nullish(),
  supersteps: z.unknown().optional(),
  ttl: z.unknown().optional(),
});

export const threadSearchSchema = z.object({
  metadata,
  ids: z.array(addressableIdSchema).max(1000).nullish(),
  status: z.enum(['idle', 'busy', 'interrupted', 'error']).nullish(),
  sort_by: z.enum(['thread_id', 'status', 'created_at', 'updated_at', 'state_updated_at']).nullish(),
  sort_order: z.enum(['asc', 'desc']).nullish(),
  ...page,
});

export const threadUpdateSchema = z.object({ metadata, ttl: z.unknown().optional() });

/** A checkpoint as the SDK names one: its id, a checkpoint, or a config (`{configurable: {checkpoint_id}}`). */
const checkpointRef = z
  .union([
    z.string().max(300),
    z
      .object({
        checkpoint_id: z.string().max(300).nullish(),
        configurable: z
          .object({ checkpoint_id: z.string().max(300).nullish() })
          .loose()
          .nullish(),
      })
      .loose(),
  ])
  .transform((ref) => (typeof ref === 'string' ? ref : (ref.checkpoint_id ?? ref.configurable?.checkpoint_id ?? undefined)));
export const historySchema = z.object({
  limit: z.number().int().min(1).max(1000).default(10),
  before: checkpointRef.nullish(),
  checkpoint: checkpointRef.nullish(),
  metadata,
});

/** A decision on one approval, as a resume value. */
export const resumeDecisionSchema = z
  .object({
    approved: z.boolean(),
    /** An edit of the arguments (approving only): re-policed by the approval service, never less strict. */
    arguments: z.record(z.string(), z.unknown()).optional(),
    reason: z.string().trim().min(1).max(2000).optional(),
  })
  .strict();
export type ResumeDecision = z.infer<typeof resumeDecisionSchema>;

/** `command.resume`: one decision (one pending approval), or a map of approval id → decision. */
export const resumeSchema = z.union([resumeDecisionSchema, z.record(z.string().max(200), resumeDecisionSchema)]);

export const commandSchema = z.object({
  resume: z.unknown().optional(),
  goto: z.unknown().optional(),
  update: z.unknown().optional(),
});

const streamModes = z
  .union([z.string(), z.array(z.string()).max(10)])
  .nullish()
  .transform((m) => (m == null ? undefined : Array.isArray(m) ? m : [m]));

export const runCreateSchema = z.object({
  assistant_id: z.string().min(1).max(64),
  input: z.unknown().optional(),
  command: commandSchema.nullish(),
  metadata,
  config: z.unknown().optional(),
  context: z.unknown().optional(),
  stream_mode: streamModes,
  multitask_strategy: ifBusySchema.nullish(),
  if_not_exists: z.enum(['create', 'reject']).nullish(),
  on_disconnect: z.enum(['cancel', 'continue']).nullish(),
  on_completion: z.enum(['delete', 'keep']).nullish(),
  stream_subgraphs: z.boolean().nullish(),
  stream_resumable: z.boolean().nullish(),
  durability: z.string().nullish(),
  checkpoint_during: z.boolean().nullish(),
  feedback_keys: z.unknown().optional(),
  interrupt_before: z.unknown().optional(),
  interrupt_after: z.unknown().optional(),
  checkpoint: z.unknown().optional(),
  checkpoint_id: z.unknown().optional(),
  webhook: z.unknown().optional(),
  after_seconds: z.unknown().optional(),
});
export type RunCreateBody = z.infer<typeof runCreateSchema>;

/** Run fields that ask for what Rein does not do (graph breakpoints, time travel, per-run webhooks, delays): 501 by name. */
export const REFUSED_RUN_FIELDS = [
  'interrupt_before',
  'interrupt_after',
  'checkpoint',
  'checkpoint_id',
  'webhook',
  'after_seconds',
] as const;

export const SERVED_STREAM_MODES: readonly string[] = STREAM_MODES;

export const runListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(10),
  offset: z.coerce.number().int().min(0).max(10_000).default(0),
  status: z.enum(['pending', 'running', 'error', 'success', 'timeout', 'interrupted']).optional(),
});

export const cancelQuerySchema = z.object({
  wait: z.enum(['0', '1', 'true', 'false']).optional(),
  action: z.enum(['interrupt', 'rollback']).default('interrupt'),
});

export const joinStreamQuerySchema = z.object({
  stream_mode: z.union([z.string(), z.array(z.string())]).optional(),
  cancel_on_disconnect: z.enum(['0', '1', 'true', 'false']).optional(),
});

export const threadPathSchema = z.object({ thread_id: addressableIdSchema });
export const runPathSchema = z.object({ thread_id: addressableIdSchema, run_id: z.string().min(1).max(128) });
export const assistantPathSchema = z.object({ assistant_id: z.string().min(1).max(64) });
export const cronPathSchema = z.object({ cron_id: z.string().min(1).max(128) });

export const cronCreateSchema = z.object({
  assistant_id: z.string().min(1).max(64),
  schedule: cronSchema,
  timezone: timezoneSchema.nullish(),
  input: z.unknown().optional(),
  metadata,
  enabled: z.boolean().nullish(),
  end_time: z.unknown().optional(),
  on_run_completed: z.unknown().optional(),
  config: z.unknown().optional(),
  context: z.unknown().optional(),
  multitask_strategy: z.unknown().optional(),
  interrupt_before: z.unknown().optional(),
  interrupt_after: z.unknown().optional(),
  webhook: z.unknown().optional(),
});

export const cronUpdateSchema = z.object({
  schedule: cronSchema.nullish(),
  timezone: timezoneSchema.nullish(),
  enabled: z.boolean().nullish(),
  input: z.unknown().optional(),
});

export const cronSearchSchema = z.object({
  assistant_id: z.string().max(64).nullish(),
  thread_id: z.string().max(128).nullish(),
  enabled: z.boolean().nullish(),
  ...page,
});

/** The store's bodies (`client.store`): namespaces as label arrays (a GET joins them with periods). */
const label = z.string().max(128);
const namespace = z.array(label).max(10);
const storeKey = z.string().min(1).max(512);
const storeValue = z.record(z.string(), z.unknown());

export const storePutSchema = z.object({
  namespace,
  key: storeKey,
  value: storeValue,
  /** Indexing for semantic search: accepted and ignored (text queries match the value's words). */
  index: z.unknown().optional(),
  /** Minutes; null or absent: kept until deleted. */
  ttl: z.number().positive().max(5_256_000).nullish(),
});

export const storeGetQuerySchema = z.object({
  namespace: z.string().max(1300).default(''),
  key: storeKey,
  refresh_ttl: z.enum(['true', 'false']).optional(),
});

export const storeDeleteSchema = z.object({ namespace, key: storeKey });

export const storeSearchSchema = z.object({
  namespace_prefix: namespace.default([]),
  filter: storeValue.nullish(),
  query: z.string().max(1000).nullish(),
  refresh_ttl: z.boolean().nullish(),
  ...page,
});

export const storeNamespacesSchema = z.object({
  prefix: namespace.nullish(),
  suffix: namespace.nullish(),
  max_depth: z.number().int().min(1).max(10).nullish(),
  limit: z.number().int().min(1).max(1000).default(100),
  offset: page.offset,
});
