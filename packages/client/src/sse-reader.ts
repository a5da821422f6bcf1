/** One server-sent event as it came over the wire. */
export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

/**
 * The events of an SSE body (the text/event-stream format): fields per line, an empty
 * line ends an event, comments (heartbeats) are skipped. Ends when the body ends.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let message: { id?: string; event?: string; data: string[] } = { data: [] };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let newline = buffer.search(/\r\n|\r|\n/);
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (message.data.length > 0) yield { id: message.id, event: message.event, data: message.data.join('\n') };
          message = { data: [] };
        } else if (!line.startsWith(':')) {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') message.data.push(value);
          else if (field === 'id') message.id = value;
          else if (field === 'event') message.event = value;
        }
        newline = buffer.search(/\r\n|\r|\n/);
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
