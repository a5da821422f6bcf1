import { z } from 'zod';
import { approvalStatusSchema, riskSchema } from './approval.js';
import { runStatusSchema } from './run.js';

/** The longest id a client can name in a path; the HTTP router (Fastify's maxParamLength) is given the same bound. */
export const MAX_ID_LENGTH = 128;

/**
 * An id that appears in a URL (`/v1/sessions/:id`, `/v1/runs/:id`, …): RFC 3986 unreserved
 * characters only, so it reads back exactly as written with no encoding, and never `.`
 * or `..` (which clients resolve away). What a client chooses (a sessionId) obeys the
 * same rule, so anything accepted can be read back.
 */
export const addressableIdSchema = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .regex(/^(?!\.\.?$)[A-Za-z0-9._~-]+$/, 'letters, digits, ".", "_", "~" or "-" (not "." or "..")');

/** The double-texting policies of `POST /v1/runs` (see `ifBusy`). */
export const ifBusySchema = z.enum(['reject', 'enqueue', 'interrupt', 'rollback']);
export type IfBusy = z.infer<typeof ifBusySchema>;

export const submitRunBodySchema = z
  .object({
    agent: z.string().min(1).max(64).optional(),
    input: z.string().trim().min(1).max(8000),
    sessionId: addressableIdSchema.optional(),
    limits: z
      .object({
        maxSteps: z.number().int().min(1).max(100).optional(),
        maxTokens: z.number().int().min(1).max(10_000_000).optional(),
        timeoutMs: z
          .number()
          .int()
          .min(1_000)
          .max(24 * 3600_000)
          .optional(),
        maxCostUsd: z.number().positive().max(1_000_000).optional(),
      })
      .strict()
      .optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    /**
     * What to do when a run of `sessionId` is still active (default `reject`: 409
     * session_busy). `enqueue`: wait behind it; `interrupt`: cancel it (reason
     * `interrupted`) and start after it; `rollback`: interrupt it, undo its compensable
     * writes, leave its turn out of the session, then start.
     */
    ifBusy: ifBusySchema.optional(),
  })
  .strict();
export type SubmitRunBody = z.infer<typeof submitRunBodySchema>;
/** What a caller may send to `POST /v1/runs`. */
export type SubmitRunInput = z.input<typeof submitRunBodySchema>;

/** The `Idempotency-Key` header of `POST /v1/runs`: a retry with the same key and body answers the same run. */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

/** The span of instants PostgreSQL's timestamptz and an ISO 8601 string both hold: years 0001 to 9999, UTC. */
export const INSTANT_BOUNDS = { earliest: '0001-01-01T00:00:00.000Z', latest: '9999-12-31T23:59:59.999Z' } as const;

/** An ISO 8601 instant within INSTANT_BOUNDS (year 0 or past 9999 would reach the archive and fail there). */
export const boundedInstantSchema = z
  .string()
  .datetime({ offset: true })
  .refine((s) => Date.parse(s) >= Date.parse(INSTANT_BOUNDS.earliest) && Date.parse(s) <= Date.parse(INSTANT_BOUNDS.latest), {
    message: `must lie between ${INSTANT_BOUNDS.earliest} and ${INSTANT_BOUNDS.latest}`,
  });

const instant = boundedInstantSchema.transform((s) => Date.parse(s));

/** A filter's text as PostgreSQL can take it: no NUL (U+0000), which its text type cannot hold. */
const filterText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((s) => !s.includes('\u0000'), { message: 'may not contain NUL (U+0000)' });

/** `GET /v1/runs`: every filter narrows; `cursor` is the `nextCursor` of the previous page. */
export const listRunsQuerySchema = z.object({
  status: runStatusSchema.optional(),
  agent: filterText(64).optional(),
  userId: filterText(128).optional(),
  createdAfter: instant.optional(),
  createdBefore: instant.optional(),
  /** A search (served by the run archive, finished runs only): text the run's input or final answer contains, any script. */
  q: z.string().trim().pipe(filterText(200)).optional(),
  /** A search's window: created at or after `from`, before `to`. */
  from: instant.optional(),
  to: instant.optional(),
  cursor: z.string().min(1).max(500).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type ListRunsQuery = z.infer<typeof listRunsQuerySchema>;
/** The filters of `GET /v1/runs` as a caller writes them (instants as ISO 8601 strings). */
export type ListRunsParams = Omit<z.input<typeof listRunsQuerySchema>, 'limit'> & { limit?: number };

/** `GET /v1/usage`: the tenant's runs created in [from, to), summed by one key. */
export const usageGroupSchema = z.enum(['agent', 'model', 'user', 'day', 'mode']);
export type UsageGroup = z.infer<typeof usageGroupSchema>;
/** The window `GET /v1/usage` sums when `from` is left out: this long before `to`. */
export const USAGE_DEFAULT_DAYS = 30;
export const usageQuerySchema = z
  .object({
    /** Default: USAGE_DEFAULT_DAYS before `to`. */
    from: boundedInstantSchema.optional(),
    /** Default: now. */
    to: boundedInstantSchema.optional(),
    groupBy: usageGroupSchema.default('day'),
  })
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) < Date.parse(q.to), {
    message: 'from must be before to',
    path: ['from'],
  });
export type UsageQueryParams = z.input<typeof usageQuerySchema>;
export type UsageQuery = z.infer<typeof usageQuerySchema>;

/** One row of `GET /v1/usage`: `key` is the agent, model, user id, UTC day (YYYY-MM-DD), or mode (`live` or `replay`). */
export const usageRowSchema = z.object({
  key: z.string(),
  runs: z.number(),
  failed: z.number(),
  steps: z.number(),
  promptTokens: z.number(),
  completionTokens: z.number(),
  costUsd: z.number(),
  p50DurationMs: z.number(),
  p95DurationMs: z.number(),
});
export type UsageRow = z.infer<typeof usageRowSchema>;
export const usageResponseSchema = z.object({
  from: z.string(),
  to: z.string(),
  groupBy: z.string(),
  /** The bounds the server chose because the request left them out (`to`: now; `from`: 30 days before `to`). */
  defaulted: z.array(z.enum(['from', 'to'])).optional(),
  rows: z.array(usageRowSchema),
});
export type UsageResponse = z.infer<typeof usageResponseSchema>;

/** `GET /v1/approvals`. */
export const listApprovalsQuerySchema = z.object({
  status: approvalStatusSchema.optional(),
  /** Triage filters: applied to each page, so a page may come back short with a cursor to go on. */
  risk: riskSchema.optional(),
  tool: z.string().min(1).max(128).optional(),
  requestedBy: z.string().min(1).max(128).optional(),
  agent: z.string().min(1).max(128).optional(),
  /** Only approvals asked for before this instant (ISO): the oldest waiting first to triage. */
  createdBefore: z.iso.datetime({ offset: true }).optional(),
  cursor: z.string().min(1).max(500).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export type ListApprovalsQuery = z.infer<typeof listApprovalsQuerySchema>;
export type ListApprovalsParams = Omit<z.input<typeof listApprovalsQuerySchema>, 'limit'> & { limit?: number };

/** `POST /v1/approvals/decide`: several approvals at once, each decided (and checked) on its own. */
export const batchDecideBodySchema = z
  .object({
    ids: z.array(z.string().min(1).max(200)).min(1).max(100),
    verdict: z.enum(['approve', 'reject']),
    comment: z.string().min(1).max(2000).optional(),
  })
  .strict()
  .refine((b) => b.verdict === 'approve' || b.comment !== undefined, {
    message: 'a rejection needs a comment (the model hears it)',
    path: ['comment'],
  })
  .refine((b) => new Set(b.ids).size === b.ids.length, { message: 'ids must be distinct', path: ['ids'] });
export type BatchDecideBody = z.infer<typeof batchDecideBodySchema>;
