import OpenAI from 'openai';
import { z } from 'zod';
import { ModelReplyInvalidError, ModelUnavailableError, ReinError } from '../errors.js';
import type { ChatMessage, ModelToolCall } from '../schemas/message.js';

export interface ModelRequest {
  messages: ChatMessage[];
  tools: Array<{ type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }>;
  maxTokens: number;
  timeoutMs: number;
}

export interface ModelReply {
  model: string;
  content: string | null;
  toolCalls: ModelToolCall[];
  usage: { promptTokens: number; completionTokens: number };
}

/** Anything that answers a chat completion: the OpenAI gateway, or a scripted fake in tests. */
export interface ModelGateway {
  complete(request: ModelRequest): Promise<ModelReply>;
}

/** What we accept from an OpenAI-compatible endpoint; anything else is a malformed reply. */
const completionSchema = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(z.object({ id: z.string().min(1), function: z.object({ name: z.string(), arguments: z.string().nullish() }) }))
            .nullish(),
        }),
      }),
    )
    .min(1),
  usage: z.object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) }).nullish(),
});

/** When an endpoint omits `usage`, charge a conservative estimate rather than nothing. */
const estimateTokens = (text: string) => Math.ceil(text.length / 2);

/** Transient failures (timeouts, 408/409/429, 5xx, connection errors) are retried later; other 4xx are not. */
function classify(err: unknown, model: string): ReinError {
  if (err instanceof OpenAI.APIError && err.status !== undefined) {
    const transient = err.status === 408 || err.status === 409 || err.status === 429 || err.status >= 500;
    return transient
      ? new ModelUnavailableError(`model ${model} answered ${err.status}`, err)
      : new ReinError('model_rejected', `model ${model} rejected the request (${err.status}): ${err.message}`, { cause: err });
  }
  return new ModelUnavailableError(`model ${model} unreachable: ${(err as Error).message}`, err);
}

/**
 * The model gateway over the `openai` package. Tries the primary model, then the
 * fallbacks in order, on transient failures. Retrying later is BullMQ's job, so the
 * SDK's own retries are off.
 */
export function createOpenAIGateway(opts: { baseURL: string; apiKey: string; models: string[] }): ModelGateway {
  const client = new OpenAI({ baseURL: opts.baseURL, apiKey: opts.apiKey, maxRetries: 0 });
  const callOnce = async (model: string, req: ModelRequest): Promise<ModelReply> => {
    let raw: unknown;
    try {
      raw = await client.chat.completions.create(
        {
          model,
          messages: req.messages as OpenAI.Chat.ChatCompletionMessageParam[],
          ...(req.tools.length ? { tools: req.tools, parallel_tool_calls: true } : {}),
          max_tokens: req.maxTokens,
        },
        { timeout: req.timeoutMs },
      );
    } catch (err) {
      throw classify(err, model);
    }
    const parsed = completionSchema.safeParse(raw);
    if (!parsed.success) throw new ModelReplyInvalidError(`model ${model} sent a malformed completion: ${parsed.error.message}`);
    const message = parsed.data.choices[0]!.message;
    const toolCalls = (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments ?? '' }));
    const usage = parsed.data.usage
      ? { promptTokens: parsed.data.usage.prompt_tokens, completionTokens: parsed.data.usage.completion_tokens }
      : {
          promptTokens: estimateTokens(JSON.stringify(req.messages)),
          completionTokens: estimateTokens((message.content ?? '') + JSON.stringify(toolCalls)),
        };
    return { model: parsed.data.model ?? model, content: message.content ?? null, toolCalls, usage };
  };

  return {
    async complete(req) {
      let last: ReinError | undefined;
      for (const model of opts.models) {
        try {
          return await callOnce(model, req);
        } catch (err) {
          last = err as ReinError;
          if (!last.retryable) throw last;
        }
      }
      throw last ?? new ModelUnavailableError('no model configured');
    },
  };
}
