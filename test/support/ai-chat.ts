import {
  AbstractChat,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';

/** The smallest ChatState: what `@ai-sdk/react`'s Chat keeps in React state, kept in fields. */
class FieldState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (m: UIMessage) => void this.messages.push(m);
  popMessage = () => void this.messages.pop();
  replaceMessage = (i: number, m: UIMessage) => {
    this.messages[i] = m;
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/**
 * A chat as `useChat` runs it, without React: the AI SDK's own AbstractChat (the class
 * its React, Vue and Svelte bindings extend) over `DefaultChatTransport`, sending answered
 * approvals by itself as a `useChat` page configured for approvals does.
 */
export class TestChat extends AbstractChat<UIMessage> {
  constructor(init: ChatInit<UIMessage>) {
    const state = new FieldState();
    super({ sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses, ...init, state });
  }

  /** Waits until `done` holds of the chat (its automatic sends included), or fails with what it shows. */
  async until(done: (chat: this) => boolean, timeoutMs = 45_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (done(this)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`the chat never got there (status ${this.status}): ${JSON.stringify(this.messages.at(-1))}`);
  }
}

export const chatTransport = (api: string, agent: string, key: string, body?: Record<string, unknown>) =>
  new DefaultChatTransport({ api: `${api}/v1/chat/${agent}`, headers: { authorization: `Bearer ${key}` }, ...(body ? { body } : {}) });

/** The tool parts of the chat's last assistant message. */
export function toolParts(chat: AbstractChat<UIMessage>) {
  const last = chat.messages.findLast((m) => m.role === 'assistant');
  return (last?.parts ?? []).filter((p) => p.type.startsWith('tool-')) as Array<
    UIMessage['parts'][number] & { type: string; toolCallId: string; state: string; approval?: { id: string }; output?: unknown }
  >;
}

/** The transport's own parser (SSE, then each chunk checked against the SDK's chunk schema), over any response body. */
class ParsingTransport extends DefaultChatTransport<UIMessage> {
  parse(body: ReadableStream<Uint8Array>) {
    return this.processResponseStream(body);
  }
}

/** Every chunk of a UI message stream, as the transport parses it (a chunk off the schema throws). */
export async function readChunks(body: ReadableStream<Uint8Array>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of new ParsingTransport().parse(body) as unknown as AsyncIterable<UIMessageChunk>) chunks.push(chunk);
  return chunks;
}
