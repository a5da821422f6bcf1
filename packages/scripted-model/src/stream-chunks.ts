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

/**
 * Sends a completion as OpenAI's `chat.completion.chunk` server-sent events: the role,
 * the content and each tool call's arguments in small pieces, the finish reason, the
 * usage when asked (`stream_options.include_usage`), then `[DONE]`.
 */
export async function streamCompletion(res: ServerResponse, c: Completion, includeUsage: boolean, chunkDelayMs: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const base = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, system_fingerprint: c.system_fingerprint };
  const send = async (delta: object, finish: string | null = null) => {
    res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    if (chunkDelayMs) await new Promise((r) => setTimeout(r, chunkDelayMs));
  };
  const choice = c.choices[0]!;
  await send({ role: 'assistant', content: '' });
  for (const piece of pieces(choice.message.content ?? '')) await send({ content: piece });
  for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
    await send({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
    for (const piece of pieces(call.function.arguments, 12)) await send({ tool_calls: [{ index, function: { arguments: piece } }] });
  }
  await send({}, choice.finish_reason);
  if (includeUsage) res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: c.usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}
