import { z } from 'zod';

/** A tool call as the model wrote it: `arguments` is raw text until a tool parses it. */
export const modelToolCallSchema = z.object({
  id: z.string().min(1),
  name: z.string(),
  arguments: z.string(),
});
export type ModelToolCall = z.infer<typeof modelToolCallSchema>;

/** Conversation history in the OpenAI chat format, as persisted per run. */
export const chatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z
      .array(
        z.object({
          id: z.string(),
          type: z.literal('function'),
          function: z.object({ name: z.string(), arguments: z.string() }),
        }),
      )
      .optional(),
  }),
  z.object({ role: z.literal('tool'), tool_call_id: z.string(), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof chatMessageSchema>;

/** A message as read back from a run's log; every reader parses the same way, so requests rebuild exactly. */
export const readMessage = (raw: string): ChatMessage => chatMessageSchema.parse(JSON.parse(raw));
