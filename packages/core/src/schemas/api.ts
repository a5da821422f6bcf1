import { z } from 'zod';
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

export const listRunsQuerySchema = z.object({
  status: runStatusSchema.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
