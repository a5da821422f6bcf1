import { z } from 'zod';

/**
 * What an agent keeps of its run in the prompt. Large tool results reach the model as a
 * structured summary plus a handle (the full text stays in the run's step records, and
 * `read_result` fetches it by handle); once the history passes `historyTokens`, its
 * oldest turns are sent as one summary message. The run's log stays complete.
 */
export const contextPolicySchema = z.object({
  /** Tool results longer than this reach the model as summary + handle. */
  toolResultMaxChars: z.number().int().min(200).max(1_000_000).default(2_000),
  /**
   * Who writes the summary of the oldest turns: `structured` (one line per call, with the
   * start of its result) or `model` (the model itself, in one extra journaled call, charged
   * to the run). Large results are always summarised by their key fields.
   */
  summarize: z.enum(['structured', 'model']).default('structured'),
  /** Past this estimate, the oldest turns of the history are sent as a summary. */
  historyTokens: z.number().int().min(500).optional(),
});
export type ContextPolicy = z.infer<typeof contextPolicySchema>;

/** The built-in tool that fetches a summarised result by handle; added to every agent with a context policy. */
export const READ_RESULT_TOOL = 'read_result';
