import { z } from 'zod';
import { approvalStatusSchema } from './approval.js';
import { runStatusSchema } from './run.js';

export const submitRunBodySchema = z
  .object({
    agent: z.string().min(1).max(64).optional(),
    input: z.string().trim().min(1).max(8000),
    sessionId: z.string().min(1).max(128).optional(),
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
  })
  .strict();
export type SubmitRunBody = z.infer<typeof submitRunBodySchema>;

const instant = z
  .string()
  .datetime({ offset: true })
  .transform((s) => Date.parse(s));

/** `GET /v1/runs`: every filter narrows; `cursor` is the `nextCursor` of the previous page. */
export const listRunsQuerySchema = z.object({
  status: runStatusSchema.optional(),
  agent: z.string().min(1).max(64).optional(),
  userId: z.string().min(1).max(128).optional(),
  createdAfter: instant.optional(),
  createdBefore: instant.optional(),
  cursor: z.string().min(1).max(500).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type ListRunsQuery = z.infer<typeof listRunsQuerySchema>;

/** `GET /v1/approvals`. */
export const listApprovalsQuerySchema = z.object({
  status: approvalStatusSchema.optional(),
  cursor: z.string().min(1).max(500).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export type ListApprovalsQuery = z.infer<typeof listApprovalsQuerySchema>;
