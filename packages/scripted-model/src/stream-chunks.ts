import type { ServerResponse } from 'node:http';

interface Completion {
  id: string;
  created: number;
  model: string;
  system_fingerprint: string;
  choices: Array<{
    message: {
      content: string | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    };
    finish_reason: string;
  }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** Text cut in pieces the way a model emits tokens (a few characters each). */
const pieces = (text: string, size = 6) =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

/** Broken wires a model endpoint may send instead of a well-formed stream (for fault tests). */
export const WIRE_FAULTS = ['cut', 'no-finish', 'empty', 'malformed-line', 'stall', 'trickle'] as const;
export type WireFault = (typeof WIRE_FAULTS)[number];

/**
 * Sends a completion as OpenAI's `chat.completion.chunk` server-sent events: the role,
 * the content and each tool call's arguments in small pieces, the finish reason, the
 * usage when asked (`stream_options.include_usage`), then `[DONE]`. A `wire` fault breaks
 * it: `cut` ends the body halfway, `no-finish` sends `[DONE]` without a finish reason,
 * `empty` finishes a reply with no text and no call, `malformed-line` sends a data line
 * that is not JSON, `stall` goes silent halfway, `trickle` then sends only keep-alive
 * comments every `keepAliveMs`.
 */
export async function streamCompletion(
  res: ServerResponse,
  c: Completion,
  includeUsage: boolean,
  chunkDelayMs: number,
  wire?: { fault: WireFault; keepAliveMs: number },
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const base = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, system_fingerprint: c.system_fingerprint };
  const event = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const choice = c.choices[0]!;
  const events = [event({ role: 'assistant', content: '' })];
  if (wire?.fault !== 'empty') {
    for (const piece of pieces(choice.message.content ?? '')) events.push(event({ content: piece }));
    for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
      events.push(event({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
      for (const piece of pieces(call.function.arguments, 12))
        events.push(event({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  }
  const half = Math.max(1, Math.floor(events.length / 2));
  if (wire?.fault === 'malformed-line') events.splice(half, 0, 'data: {"choices": [{"delta": {"content": "x"\n\n');
  if (wire?.fault !== 'no-finish') events.push(event({}, wire?.fault === 'empty' ? 'stop' : choice.finish_reason));
  if (includeUsage) events.push(`data: ${JSON.stringify({ ...base, choices: [], usage: c.usage })}\n\n`);
  events.push('data: [DONE]\n\n');

  const broken = wire && ['cut', 'stall', 'trickle'].includes(wire.fault);
  for (const e of broken ? events.slice(0, half) : events) {
    res.write(e);
    if (chunkDelayMs) await new Promise((r) => setTimeout(r, chunkDelayMs));
  }
  if (wire?.fault === 'stall') return; // open and silent until the client gives up
  if (wire?.fault === 'trickle') {
    const timer = setInterval(() => res.write(': keep-alive\n\n'), wire.keepAliveMs);
    res.on('close', () => clearInterval(timer));
    return;
  }
  res.end();
}
