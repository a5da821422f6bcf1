import { addressableIdSchema } from '@rein/contract';
import { z } from 'zod';

/**
 * The request bodies of the protocol doors, as their clients send them. Open objects (a
 * newer client may add fields), but every list is bounded: only the last message is
 * read, so a long history is refused rather than parsed.
 */
export const MAX_DOOR_MESSAGES = 200;
const MAX_PARTS = 100;
const clientId = z.string().min(1).max(200);

/** An AI SDK `UIMessage` part: text, a tool part (`tool-<name>` or `dynamic-tool`), or anything else (ignored). */
const uiPartSchema = z.looseObject({
  type: z.string().max(200),
  text: z.string().optional(),
  toolCallId: z.string().max(200).optional(),
  state: z.string().max(50).optional(),
  approval: z
    .looseObject({ id: z.string().max(200), approved: z.boolean().optional(), reason: z.string().max(2000).optional() })
    .optional(),
});
export type UiPart = z.infer<typeof uiPartSchema>;

const uiMessageSchema = z.looseObject({
  id: clientId,
  role: z.enum(['system', 'user', 'assistant']),
  parts: z.array(uiPartSchema).max(MAX_PARTS),
});

/** What `DefaultChatTransport` posts: the chat id, its messages, why it sends. */
export const chatRequestSchema = z.looseObject({
  id: addressableIdSchema,
  messages: z.array(uiMessageSchema).min(1).max(MAX_DOOR_MESSAGES),
  trigger: z.enum(['submit-message', 'regenerate-message']).default('submit-message'),
  messageId: clientId.optional(),
  /** Rein's own: cancel the run when the client aborts the request (default: the run goes on). */
  cancelOnAbort: z.boolean().optional(),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** The path of the chat routes: the agent, and the chat id for a reconnect. */
export const chatParamsSchema = z.object({ agent: z.string().min(1).max(64) });
export const chatStreamParamsSchema = chatParamsSchema.extend({ id: addressableIdSchema });

/** An AG-UI resume entry: `payload.approved`, `payload.arguments` (an edit), `payload.reason`. */
const resumeEntrySchema = z.looseObject({
  interruptId: clientId,
  status: z.enum(['resolved', 'cancelled']),
  payload: z
    .looseObject({
      approved: z.boolean().optional(),
      arguments: z.record(z.string(), z.unknown()).optional(),
      reason: z.string().max(2000).optional(),
    })
    .optional(),
});

/** AG-UI's `RunAgentInput`. `tools`, `context`, `state` and `forwardedProps` are accepted and ignored. */
export const runAgentInputSchema = z.looseObject({
  threadId: addressableIdSchema,
  runId: clientId,
  messages: z.array(z.looseObject({ id: clientId, role: z.string().max(50), content: z.unknown().optional() })).max(MAX_DOOR_MESSAGES),
  tools: z.array(z.unknown()).max(MAX_PARTS).optional(),
  context: z.array(z.unknown()).max(MAX_PARTS).optional(),
  resume: z.array(resumeEntrySchema).max(MAX_PARTS).optional(),
});
export type RunAgentInput = z.infer<typeof runAgentInputSchema>;

/** The text of an AG-UI message's content: a string, or the text parts of a list. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .flatMap((p) =>
      p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' ? [String((p as { text?: unknown }).text ?? '')] : [],
    )
    .join('\n');
}
