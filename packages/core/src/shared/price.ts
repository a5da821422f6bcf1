import { z } from 'zod';

/** What a model costs, per million prompt and completion tokens (an entry of REIN_MODEL_PRICES). */
export const priceSchema = z.object({ promptPerMTok: z.number().min(0), completionPerMTok: z.number().min(0) });
export type Price = z.infer<typeof priceSchema>;
