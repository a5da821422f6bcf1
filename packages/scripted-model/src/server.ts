import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { playOrderAssistant } from './script.js';

export const SCRIPTED_MODEL_ID = 'rein-scripted-order-assistant';

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
  max_tokens: z.number().int().positive().optional(),
  stream: z.boolean().optional(),
});

/** Rough token count: one per CJK character, one per four other characters. */
export function countTokens(text: string): number {
  const cjk = text.match(/[\u3400-\u9fff]/g)?.length ?? 0;
  return cjk + Math.ceil((text.length - cjk) / 4);
}

export interface ScriptedModelOptions {
  /** Added before every completion, so benchmarks and fault tests see model-like latency. */
  latencyMs?: number;
}

/**
 * An OpenAI-compatible endpoint that plays the order assistant from rules. It is not an
 * LLM and says so in its model id, its /v1/models entry and every reply's fingerprint.
 */
export function createScriptedModelServer(opts: ScriptedModelOptions = {}): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 4 * 1024 * 1024 });
  let counter = 0;

  app.get('/v1/models', async () => ({
    object: 'list',
    data: [{ id: SCRIPTED_MODEL_ID, object: 'model', created: 0, owned_by: 'rein (scripted rules, not an LLM)' }],
  }));

  app.post('/v1/chat/completions', async (req, reply) => {
    const parsed = requestSchema.safeParse(req.body);
    if (!parsed.success) {
      return reply.status(400).send({ error: { type: 'invalid_request_error', message: parsed.error.message } });
    }
    if (parsed.data.stream) {
      return reply.status(400).send({ error: { type: 'invalid_request_error', message: 'the scripted model does not stream' } });
    }
    if (opts.latencyMs) await new Promise((r) => setTimeout(r, opts.latencyMs));
    const { messages } = parsed.data;
    const turn = messages.filter((m) => m.role === 'assistant').length;
    const move = playOrderAssistant(messages);
    const toolCalls = move.toolCalls.map((c, i) => ({
      id: `call_${turn}_${i}`,
      type: 'function' as const,
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
    const promptTokens = countTokens(JSON.stringify(messages));
    const completionTokens = countTokens((move.content ?? '') + JSON.stringify(toolCalls));
    counter += 1;
    return {
      id: `chatcmpl-scripted-${counter}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: SCRIPTED_MODEL_ID,
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
  });
  return app;
}
