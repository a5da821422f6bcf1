import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { argumentsFor, type OfferedTool, playAnyTools } from './any-tools.js';
import { type ExplicitScript, playScript } from './explicit-script.js';
import { followPlan, planRequest, writePlan } from './plan.js';
import { playOrderAssistant } from './script.js';
import { streamCompletion, WIRE_FAULTS } from './stream-chunks.js';
import { structuredAnswer } from './structured-answer.js';

export const SCRIPTED_MODEL_ID = 'rein-scripted';

const requestSchema = z.object({
  model: z.string().optional(),
  messages: z
    .array(
      z.object({
        role: z.string(),
        content: z.string().nullish(),
        tool_calls: z.array(z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }) })).nullish(),
        tool_call_id: z.string().optional(),
      }),
    )
    .min(1),
  tools: z
    .array(z.object({ function: z.object({ name: z.string(), parameters: z.record(z.string(), z.unknown()).optional() }) }))
    .optional(),
  max_tokens: z.number().int().positive().optional(),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
  response_format: z
    .object({
      type: z.string(),
      json_schema: z.object({ name: z.string(), schema: z.record(z.string(), z.unknown()).optional() }).optional(),
    })
    .optional(),
});

/** The order assistant's script for its own tools (or none); the generic rule for anyone else's. */
function play(messages: z.infer<typeof requestSchema>['messages'], tools: OfferedTool[], responseFormat?: unknown) {
  const wanted = planRequest(responseFormat);
  if (wanted) {
    const input = messages.findLast((m) => m.role === 'user')?.content ?? '';
    return writePlan(input, tools, wanted.maxSteps, (t) => argumentsFor(t, input));
  }
  const planned = followPlan(messages);
  if (planned) return planned;
  if (tools.length === 0 || tools.some((t) => t.name === 'query_order'))
    return playOrderAssistant(
      messages,
      tools.map((t) => t.name),
    );
  return playAnyTools(messages, tools);
}

/** Rough token count: one per CJK character, one per four other characters. */
export function countTokens(text: string): number {
  const cjk = text.match(/[\u3400-\u9fff]/g)?.length ?? 0;
  return cjk + Math.ceil((text.length - cjk) / 4);
}

export interface ScriptedModelOptions {
  /** Added before every completion, so benchmarks and fault tests see model-like latency. */
  latencyMs?: number;
  /** Pause between streamed chunks, so tests can act in the middle of a stream. */
  chunkDelayMs?: number;
  /** Serves POST /_faults, the fault-injection control for tests and the chaos suite. */
  faultControl?: boolean;
  /** Replies played turn by turn instead of the rules (SCRIPTED_MODEL_SCRIPT): exact tool calls for a test or a demo. */
  script?: ExplicitScript;
}

/** What the model does instead of answering well, until `untilMs`: fail with a status, hang, or send a broken wire. */
const faultSchema = z.object({
  /** `json-for-stream` answers a streaming request with one JSON completion; the WIRE_FAULTS break the stream itself. */
  mode: z.enum(['none', 'error', 'hang', 'json-for-stream', ...WIRE_FAULTS]),
  status: z.number().int().min(400).max(599).default(500),
  retryAfterSeconds: z.number().min(0).optional(),
  untilMs: z.number().int().min(0).default(Number.MAX_SAFE_INTEGER),
  /** Only for these model names (all when absent): lets tests fail the primary and keep a fallback. */
  models: z.array(z.string()).optional(),
  /** How often `trickle` sends its keep-alive comment. */
  keepAliveMs: z.number().int().min(1).default(1000),
});
type Fault = z.infer<typeof faultSchema>;

/**
 * An OpenAI-compatible endpoint that plays the order assistant from rules, any
 * other app's tools from one generic rule, or an explicit script of turns. It is not an LLM and says so in its model
 * id, its /v1/models entry and every reply's fingerprint.
 */
export function createScriptedModelServer(opts: ScriptedModelOptions = {}): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 4 * 1024 * 1024 });
  let counter = 0;
  let fault: Fault = { mode: 'none', status: 500, untilMs: 0, keepAliveMs: 1000 };

  if (opts.faultControl) {
    app.post('/_faults', async (req, reply) => {
      const parsed = faultSchema.safeParse(req.body);
      if (!parsed.success) return reply.status(400).send({ error: { message: parsed.error.message } });
      fault = parsed.data;
      return { ok: true, fault };
    });
  }

  app.get('/v1/models', async () => ({
    object: 'list',
    data: [{ id: SCRIPTED_MODEL_ID, object: 'model', created: 0, owned_by: 'rein (scripted rules, not an LLM)' }],
  }));

  app.post('/v1/chat/completions', async (req, reply) => {
    const parsed = requestSchema.safeParse(req.body);
    if (!parsed.success) {
      return reply.status(400).send({ error: { type: 'invalid_request_error', message: parsed.error.message } });
    }
    const requested = parsed.data.model ?? SCRIPTED_MODEL_ID;
    const faulty = fault.mode !== 'none' && Date.now() < fault.untilMs && (!fault.models || fault.models.includes(requested));
    if (faulty && (fault.mode === 'error' || fault.mode === 'hang')) {
      if (fault.mode === 'hang') return new Promise(() => {}); // until the client gives up
      if (fault.retryAfterSeconds !== undefined) reply.header('retry-after', String(fault.retryAfterSeconds));
      return reply.status(fault.status).send({ error: { type: 'server_error', message: `injected fault: ${fault.status}` } });
    }
    if (opts.latencyMs) await new Promise((r) => setTimeout(r, opts.latencyMs));
    const { messages } = parsed.data;
    const turn = messages.filter((m) => m.role === 'assistant').length;
    const move = opts.script
      ? playScript(opts.script, messages, requested)
      : play(
          messages,
          (parsed.data.tools ?? []).map((t) => t.function as OfferedTool),
          parsed.data.response_format,
        );
    const format = parsed.data.response_format;
    // A plan request was answered with the plan itself; any other schema gets an answer of its shape.
    if (format?.type === 'json_schema' && format.json_schema && move.toolCalls.length === 0 && !planRequest(format)) {
      const userTexts = messages.flatMap((m) => (m.role === 'user' && m.content ? [m.content] : []));
      move.content = structuredAnswer(format.json_schema.schema ?? {}, move.content ?? '', userTexts);
    }
    const toolCalls = move.toolCalls.map((c, i) => ({
      id: `call_${turn}_${i}`,
      type: 'function' as const,
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
    const promptTokens = countTokens(JSON.stringify(messages));
    const completionTokens = countTokens((move.content ?? '') + JSON.stringify(toolCalls));
    counter += 1;
    const completion = {
      id: `chatcmpl-scripted-${counter}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      // Echo the requested name, so fallback models are visible in traces; the fingerprint stays honest.
      model: requested,
      system_fingerprint: 'scripted-rules-not-an-llm',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: move.content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
          finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
        },
      ],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
    if (!parsed.data.stream || (faulty && fault.mode === 'json-for-stream')) return completion;
    const wire = faulty ? WIRE_FAULTS.find((m) => m === fault.mode) : undefined;
    reply.hijack();
    await streamCompletion(
      reply.raw,
      completion,
      parsed.data.stream_options?.include_usage === true,
      opts.chunkDelayMs ?? 0,
      wire ? { fault: wire, keepAliveMs: fault.keepAliveMs } : undefined,
    );
  });
  return app;
}
