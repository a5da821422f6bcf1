import { z } from 'zod';

/** Bounds of a plan-mode agent's plan (engine/plan.ts in @rein/core follows the plan). */
export const planOptionsSchema = z
  .object({
    minSteps: z.number().int().min(1).max(50).default(2),
    maxSteps: z.number().int().min(1).max(50).default(6),
  })
  .refine((o) => o.minSteps <= o.maxSteps, 'minSteps must not exceed maxSteps');
export type PlanOptions = z.infer<typeof planOptionsSchema>;
