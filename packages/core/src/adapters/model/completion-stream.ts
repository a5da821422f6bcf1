import { createParser } from 'eventsource-parser';
import { z } from 'zod';
import { ModelReplyInvalidError, ModelUnavailableError } from '../../shared/errors.js';

/** A piece of a streamed reply: text, or a part of the `index`-th tool call (its id and name come first). */
export interface ModelDelta {
  content?: string;
  toolCall?: { index: number; id?: string; name?: string; arguments?: string };
}

/** One `chat.completion.chunk`, as far as it is read; anything else on a data line is a malformed reply. */
const chunkSchema = z.object({
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        index: z.number().int().min(0).default(0),
        finish_reason: z.string().nullish(),
        delta: z
          .object({
            content: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int().min(0).max(127),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
      }),
    )
    .nullish(),
  usage: z.object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) }).nullish(),
  /** Providers report a failure in the middle of a stream as an event of its own. */
  error: z.unknown().optional(),
});

/** A data line longer than this is no chunk (and would grow the buffer without end). */
const MAX_EVENT_CHARS = 1024 * 1024;

/**
 * Reads a streamed chat completion (server-sent `chat.completion.chunk` events) into the
 * shape of a whole one, passing each piece to `onDelta` as it arrives and calling
 * `onEvent` on every event (not on keep-alive comments). The reply is complete only when
 * its choice carries a `finish_reason`: a stream that ends without one — cut, empty, or
 * `[DONE]` too early — or that sends a line that is not a chunk is a ModelReplyInvalidError.
 */
export async function readCompletionStream(
  body: AsyncIterable<Uint8Array>,
  model: string,
  onDelta: (d: ModelDelta) => void,
  onEvent: () => void,
) {
  let content: string | null = null;
  let finish: string | null = null;
  let answered = model;
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  let done = false;
  let failure: Error | undefined;
  const calls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];

  const take = (data: string) => {
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      throw new ModelReplyInvalidError(`model ${model} sent a stream line that is not JSON: ${data.slice(0, 200)}`);
    }
    const parsed = chunkSchema.safeParse(json);
    if (!parsed.success) throw new ModelReplyInvalidError(`model ${model} sent a malformed chunk: ${parsed.error.message}`);
    const chunk = parsed.data;
    if (chunk.error !== undefined) {
      throw new ModelUnavailableError(`model ${model} failed mid-stream: ${JSON.stringify(chunk.error).slice(0, 200)}`);
    }
    answered = chunk.model || answered;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.find((c) => c.index === 0);
    if (!choice) return;
    if (choice.finish_reason) finish = choice.finish_reason;
    const delta = choice.delta;
    if (delta?.content) {
      content = (content ?? '') + delta.content;
      onDelta({ content: delta.content });
    }
    for (const part of delta?.tool_calls ?? []) {
      calls[part.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
      const call = calls[part.index]!;
      if (part.id) call.id = part.id;
      if (part.function?.name) call.function.name += part.function.name;
      if (part.function?.arguments) call.function.arguments += part.function.arguments;
      onDelta({
        toolCall: {
          index: part.index,
          ...(part.id ? { id: part.id } : {}),
          ...(part.function?.name ? { name: part.function.name } : {}),
          ...(part.function?.arguments ? { arguments: part.function.arguments } : {}),
        },
      });
    }
  };

  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: (event) => {
      if (done || failure) return;
      onEvent();
      if (event.data === '[DONE]') done = true;
      else {
        try {
          take(event.data);
        } catch (err) {
          failure = err as Error;
        }
      }
    },
    onError: (err) => {
      // Unknown fields are ignored (as browsers do); an endless line is not.
      if (err.type === 'max-buffer-size-exceeded')
        failure = new ModelReplyInvalidError(`model ${model} sent an event over ${MAX_EVENT_CHARS} characters`);
    },
  });

  const decoder = new TextDecoder();
  try {
    // Leaving the loop early destroys the body: nothing more is read, and a stream still open is not left to trickle.
    for await (const chunk of body) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (done || failure) break;
    }
    if (!failure && !done) parser.reset({ consume: true }); // a last event without its blank line still counts
  } catch (err) {
    // Cut (or dropped) after the finish_reason: only the trailer (usage, [DONE]) is lost, the reply is whole.
    if (!finish || failure) throw err;
  }
  if (failure) throw failure;
  if (!finish) {
    throw new ModelReplyInvalidError(
      done
        ? `model ${model} ended its stream ([DONE]) without a finish_reason: the reply may be incomplete`
        : `model ${model}'s stream ended before the reply was complete (no finish_reason)`,
    );
  }
  return {
    model: answered,
    choices: [{ finish_reason: finish, message: { content, ...(calls.length ? { tool_calls: calls.filter(Boolean) } : {}) } }],
    ...(usage ? { usage } : {}),
  };
}
