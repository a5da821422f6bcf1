import type { ChatMessage, ModelToolCall } from '@rein/contract';
import { Agent, type Dispatcher, request } from 'undici';
import { z } from 'zod';
import { ModelCallCutError, ModelRejectedError, ModelReplyInvalidError, ModelUnavailableError, ReinError } from '../../shared/errors.js';
import { startCallDeadline } from './call-deadline.js';
import { type ModelDelta, readCompletionStream } from './completion-stream.js';

export type { ModelDelta };

export interface ModelRequest {
  messages: ChatMessage[];
  tools: Array<{ type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }>;
  maxTokens: number;
  /** The whole call, body included (REIN_MODEL_TIMEOUT_MS or what is left of the run's deadline, whichever is less). */
  timeoutMs: number;
  /**
   * `timeoutMs` is what is left of the run's deadline, shorter than the model's own timeout:
   * a call it cuts was cut by the caller, which says nothing of the model's health.
   */
  deadlineBound?: boolean;
  /** The longest silence of a streamed reply once it started (REIN_MODEL_IDLE_TIMEOUT_MS); keep-alive comments do not count. */
  idleTimeoutMs?: number;
  /** The agent's own models in order, instead of REIN_MODEL and its fallbacks. */
  models?: readonly string[];
  /** Receives the reply's text and tool-call pieces as they are written; set, the call streams (`stream: true`). */
  onDelta?: (delta: ModelDelta) => void;
  /** Structured output — an agent's `output` schema, or a plan-mode agent's plan — sent as `response_format` json_schema where the provider supports it; the reply is validated all the same. */
  responseFormat?: { name: string; schema: Record<string, unknown> };
  /** The fleet lease this call's step took with its read (ModelGateway.lease): the call uses it instead of asking for one. */
  lease?: ModelLease;
}

export interface ModelReply {
  model: string;
  content: string | null;
  toolCalls: ModelToolCall[];
  usage: { promptTokens: number; completionTokens: number };
  /** Why the model stopped, per choice (`stop`, `tool_calls`, `length`, ...), when the endpoint says. */
  finishReasons?: string[];
  /** The request asked for a stream (`stream: true`); `raw` is the chunks assembled, or the whole completion a gateway sent instead. */
  streamed?: boolean;
  /** The completion exactly as the endpoint sent it (for decision snapshots). */
  raw?: unknown;
}

/** A fleet lease on a model, asked for before its call is known to happen. */
export interface ModelLease {
  readonly model: string;
  /** Settles when the lease's answer is in; never rejects (a failed request is the call's error). */
  readonly answered: Promise<unknown>;
  /** Gives it back: the step will not call this model (or is done). Once is enough; later calls do nothing. */
  release(): void;
}

/** Anything that answers a chat completion: the OpenAI gateway, or a scripted fake in tests. */
export interface ModelGateway {
  complete(request: ModelRequest): Promise<ModelReply>;
  /**
   * Sends the request for the fleet lease of the model a call tries first, now, so a step
   * can send it with its read and await both in one round trip (`timeoutMs`: the longest
   * the call may take). Undefined when there is nothing to take ahead (no fleet limit, or
   * this process is at its own limit for the model and the call will wait for a slot).
   */
  lease?(timeoutMs: number): ModelLease | undefined;
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
function retryAfterMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, 10 * 60_000) : undefined;
}

const header = (headers: Dispatcher.ResponseData['headers'], name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** What an endpoint says went wrong: its `error.message` when it sends the usual JSON error, else the start of the body. */
function errorMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') return message;
  } catch {}
  return text.slice(0, 200);
}

/** Transient answers (408/409/429, 5xx) are retried later; other 4xx are not. */
function statusError(status: number, retryAfter: string | undefined, text: string, model: string): ReinError {
  const transient = status === 408 || status === 409 || status === 429 || status >= 500;
  return transient
    ? new ModelUnavailableError(`model ${model} answered ${status}`, new Error(errorMessage(text)), retryAfterMs(retryAfter))
    : new ModelRejectedError(`model ${model} rejected the request (${status}): ${errorMessage(text)}`, new Error(text.slice(0, 200)));
}

/**
 * The body of a chat completion request: one place decides the wire shape, so a decision
 * snapshot can be turned back into exactly what the endpoint received.
 */
export function chatCompletionBody(
  model: string,
  req: Pick<ModelRequest, 'messages' | 'tools' | 'maxTokens' | 'responseFormat'> & { stream?: boolean },
) {
  return {
    model,
    messages: req.messages,
    ...(req.tools.length ? { tools: req.tools, parallel_tool_calls: true } : {}),
    max_tokens: req.maxTokens,
    // Not strict: strict mode restricts the schemas a zod schema may become; the answer is validated anyway.
    ...(req.responseFormat
      ? { response_format: { type: 'json_schema' as const, json_schema: { ...req.responseFormat, strict: false } } }
      : {}),
    ...(req.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}

/** One chat completion from one model; never retried here (the queue retries). */
export type CompleteWith = (model: string, request: ModelRequest) => Promise<ModelReply>;

/**
 * Chat completions from one OpenAI-compatible endpoint, over undici's `request` with a
 * keep-alive pool of its own. Not the `openai` package: a worker spends most of its CPU
 * per step on the model call's client side, and the SDK's per-request work costs about
 * four times what a bare request does (docs/performance.md); Rein only needs the wire
 * format, which it validates itself.
 */
export function createOpenAICompletion(opts: { baseURL: string; apiKey: string }): CompleteWith {
  const url = `${opts.baseURL.replace(/\/+$/, '')}/chat/completions`;
  // The call's own deadline (below) bounds the wait for headers and body; undici's would cut long calls at 300 s.
  const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${opts.apiKey}` };
  return async (model, req) => {
    const deadline = startCallDeadline(req.timeoutMs, req.idleTimeoutMs);
    const stream = req.onDelta !== undefined;
    let raw: unknown;
    try {
      const response = await request(url, {
        method: 'POST',
        dispatcher,
        headers: { ...headers, accept: stream ? 'text/event-stream' : 'application/json' },
        body: JSON.stringify(chatCompletionBody(model, { ...req, stream })),
        signal: deadline.signal,
      });
      if (response.statusCode >= 300) {
        const text = await response.body.text();
        throw statusError(response.statusCode, header(response.headers, 'retry-after'), text, model);
      }
      raw = await readReply(response, model, req.onDelta, deadline.touch);
    } catch (err) {
      if (err instanceof ReinError) throw err;
      const cut = deadline.cut();
      if (cut?.by === 'total' && req.deadlineBound)
        throw new ModelCallCutError(`model ${model} cut at the run's deadline: ${cut.reason}`, err);
      throw cut
        ? new ModelUnavailableError(`model ${model} timed out: ${cut.reason}`, err)
        : new ModelUnavailableError(`model ${model} unreachable: ${(err as Error).message}`, err);
    } finally {
      deadline.stop();
    }
    const parsed = completionSchema.safeParse(raw);
    if (!parsed.success) throw new ModelReplyInvalidError(`model ${model} sent a malformed completion: ${parsed.error.message}`);
    const message = parsed.data.choices[0]!.message;
    const toolCalls = (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments ?? '' }));
    // An empty reply decides nothing: it is retried like any broken one, never taken as an empty answer.
    if (!message.content && toolCalls.length === 0)
      throw new ModelReplyInvalidError(`model ${model} sent an empty reply (no text, no tool call)`);
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
      ...(req.onDelta ? { streamed: true } : {}),
      raw,
    };
  };
}

/**
 * The reply's body: server-sent chunks when the endpoint streams, or — as some gateways
 * answer a streaming request — one whole JSON completion, read as such (its text and
 * calls still go to `onDelta`, in one piece each).
 */
async function readReply(
  response: Dispatcher.ResponseData,
  model: string,
  onDelta: ModelRequest['onDelta'],
  touch: () => void,
): Promise<unknown> {
  if (onDelta && /^text\/event-stream/i.test(header(response.headers, 'content-type') ?? '')) {
    return readCompletionStream(response.body, model, onDelta, touch);
  }
  const text = await response.body.text();
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    throw new ModelReplyInvalidError(`model ${model} sent a body that is not a JSON completion: ${text.slice(0, 200)}`);
  }
  const message = completionSchema.safeParse(whole).data?.choices[0]?.message;
  if (onDelta && message) {
    if (message.content) onDelta({ content: message.content });
    for (const [index, call] of (message.tool_calls ?? []).entries()) {
      onDelta({
        toolCall: {
          index,
          id: call.id,
          name: call.function.name,
          ...(call.function.arguments ? { arguments: call.function.arguments } : {}),
        },
      });
    }
  }
  return whole;
}
