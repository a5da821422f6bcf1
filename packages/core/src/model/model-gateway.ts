import OpenAI from 'openai';
import { z } from 'zod';
import { ModelRejectedError, ModelReplyInvalidError, ModelUnavailableError, type ReinError } from '../errors.js';
import type { ChatMessage, ModelToolCall } from '../schemas/message.js';

export interface ModelRequest {
  messages: ChatMessage[];
  tools: Array<{ type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }>;
  maxTokens: number;
  timeoutMs: number;
  /** The agent's own models in order, instead of REIN_MODEL and its fallbacks. */
  models?: readonly string[];
  /** Structured output (`response_format`), e.g. a plan-mode agent's plan; the reply is validated all the same. */
  responseFormat?: Record<string, unknown>;
}

export interface ModelReply {
  model: string;
  content: string | null;
  toolCalls: ModelToolCall[];
  usage: { promptTokens: number; completionTokens: number };
  /** Why the model stopped, per choice (`stop`, `tool_calls`, `length`, ...), when the endpoint says. */
  finishReasons?: string[];
  /** The completion exactly as the endpoint sent it (for decision snapshots). */
  raw?: unknown;
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
        finish_reason: z.string().nullish(),
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

/** Retry-After in seconds or as an HTTP date, in ms from now. */
function retryAfterMs(headers: unknown): number | undefined {
  const value = (headers as { get?: (k: string) => string | null } | undefined)?.get?.('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, 10 * 60_000) : undefined;
}

/** Transient failures (timeouts, 408/409/429, 5xx, connection errors) are retried later; other 4xx are not. */
function classify(err: unknown, model: string): ReinError {
  if (err instanceof OpenAI.APIError && err.status !== undefined) {
    const transient = err.status === 408 || err.status === 409 || err.status === 429 || err.status >= 500;
    return transient
      ? new ModelUnavailableError(`model ${model} answered ${err.status}`, err, retryAfterMs(err.headers))
      : new ModelRejectedError(`model ${model} rejected the request (${err.status}): ${err.message}`, err);
  }
  return new ModelUnavailableError(`model ${model} unreachable: ${(err as Error).message}`, err);
}

/**
 * The body of a chat completion request: one place decides the wire shape, so a decision
 * snapshot can be turned back into exactly what the endpoint received.
 */
export function chatCompletionBody(model: string, req: Pick<ModelRequest, 'messages' | 'tools' | 'maxTokens' | 'responseFormat'>) {
  return {
    model,
    messages: req.messages as OpenAI.Chat.ChatCompletionMessageParam[],
    ...(req.tools.length ? { tools: req.tools, parallel_tool_calls: true } : {}),
    max_tokens: req.maxTokens,
    ...(req.responseFormat ? { response_format: req.responseFormat as unknown as OpenAI.ResponseFormatJSONSchema } : {}),
  };
}

/** One chat completion from one model, over the `openai` package; the SDK's own retries are off (the queue retries). */
export type CompleteWith = (model: string, request: ModelRequest) => Promise<ModelReply>;

export function createOpenAICompletion(opts: { baseURL: string; apiKey: string }): CompleteWith {
  const client = new OpenAI({ baseURL: opts.baseURL, apiKey: opts.apiKey, maxRetries: 0 });
  return async (model, req) => {
    let raw: unknown;
    try {
      raw = await client.chat.completions.create(chatCompletionBody(model, req), { timeout: req.timeoutMs });
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
    const finishReasons = parsed.data.choices.flatMap((c) => (c.finish_reason ? [c.finish_reason] : []));
    return {
      model: parsed.data.model ?? model,
      content: message.content ?? null,
      toolCalls,
      usage,
      ...(finishReasons.length ? { finishReasons } : {}),
      raw,
    };
  };
}
