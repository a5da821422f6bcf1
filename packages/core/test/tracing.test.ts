import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatSpan, toolSpan } from '../src/adapters/tracing/genai.js';
import { stepSpan, submitSpan } from '../src/adapters/tracing/rein-spans.js';
import { annotateActiveSpan } from '../src/adapters/tracing/spans.js';
import { activeTraceparent, parseTraceparent } from '../src/adapters/tracing/trace-context.js';
import { maskedContent, setupTracing, type Tracing } from '../src/adapters/tracing/tracing-setup.js';
import { createPiiMasker } from '../src/shared/guards/pii-masker.js';
import { createLogger, logTraceFields } from '../src/shared/logger.js';
import { optionsFromEnv } from '../src/shared/options.js';
import { type OtlpReceiver, startOtlpReceiver } from '../src/testing/otlp-receiver.js';

const logger = createLogger('silent', 'test');
const CALLER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const PHONE = '13812345678';

let receiver: OtlpReceiver;
let tracing: Tracing;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  const options = optionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
  tracing = setupTracing(options.tracing, 'worker', createPiiMasker(), logger);
});
afterAll(async () => {
  await tracing.shutdown();
  await receiver.close();
});

describe('tracing exported over OTLP http/json', () => {
  it('nests submit → step → chat and execute_tool in the caller’s trace, with the GenAI attributes and no contents', async () => {
    let jobTraceparent: string | undefined;
    let logFields: object = {};
    const runTrace = await submitSpan(CALLER, async (tp) => tp);
    await stepSpan('resume', { runId: 'run-1', step: 2, traceparent: runTrace }, async () => {
      jobTraceparent = activeTraceparent(); // what the next job would carry
      logFields = logTraceFields();
      await chatSpan(
        'gpt-x',
        'openai',
        { messages: [{ role: 'user', content: `call me at ${PHONE}` }], tools: [], maxTokens: 64, timeoutMs: 1000 },
        undefined,
        async () => {
          annotateActiveSpan({ 'rein.breaker.state': 'closed' });
          return {
            model: 'gpt-x-2025',
            content: `ok ${PHONE}`,
            toolCalls: [],
            usage: { promptTokens: 12, completionTokens: 3 },
            finishReasons: ['tool_calls'],
          };
        },
      );
      // An operator who opted in gets the contents, PII-masked like logs.
      await chatSpan(
        'gpt-y',
        'openai',
        { messages: [{ role: 'user', content: `call me at ${PHONE}` }], tools: [], maxTokens: 8, timeoutMs: 1000 },
        maskedContent(createPiiMasker()),
        async () => ({
          model: 'gpt-y',
          content: `noted ${PHONE}`,
          toolCalls: [],
          usage: { promptTokens: 1, completionTokens: 1 },
        }),
      );
      const record = {
        id: 'call_1',
        name: 'create_ticket',
        arguments: { phone: PHONE },
        outcome: 'ok' as const,
        observation: 'done',
        durationMs: 1,
        approvalId: 'a.2.0',
      };
      await toolSpan({ id: 'call_1', name: 'create_ticket', arguments: '{}' }, undefined, async () => ({ record }));
      return 'continued';
    });
    await tracing.shutdown(); // flushes the batch

    expect(receiver.encodings).toContain('json');
    const byName = new Map(receiver.spans.map((s) => [s.name, s]));
    const submit = byName.get('rein.run.submit');
    const step = byName.get('rein.step');
    const chat = byName.get('chat gpt-x');
    const tool = byName.get('execute_tool create_ticket');
    expect(new Set(receiver.spans.map((s) => s.traceId))).toEqual(new Set(['0af7651916cd43dd8448eb211c80319c']));
    expect(submit?.parentSpanId).toBe('b7ad6b7169203331');
    expect(runTrace).toContain(submit?.spanId);
    expect(step).toMatchObject({
      parentSpanId: submit?.spanId,
      attributes: { 'rein.run.id': 'run-1', 'rein.step': 2, 'rein.job': 'resume', 'rein.step.outcome': 'continued' },
    });
    expect(parseTraceparent(jobTraceparent)?.spanId).toBe(step?.spanId);
    expect(logFields).toEqual({ trace_id: step?.traceId, span_id: step?.spanId });
    expect(chat).toMatchObject({
      parentSpanId: step?.spanId,
      kind: 3, // CLIENT
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-x',
        'gen_ai.response.model': 'gpt-x-2025',
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 3,
        'gen_ai.response.finish_reasons': ['tool_calls'],
        'rein.breaker.state': 'closed',
      },
      resource: { 'service.name': 'rein-worker' },
    });
    expect(tool).toMatchObject({
      parentSpanId: step?.spanId,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'create_ticket',
        'gen_ai.tool.call.id': 'call_1',
        'rein.tool.outcome': 'ok',
        'rein.approval.id': 'a.2.0',
      },
    });
    // Contents stay home unless an operator opts in (and a phone number never leaves unmasked).
    expect(JSON.stringify(receiver.spans)).not.toContain(PHONE);
    expect(Object.keys({ ...chat?.attributes, ...tool?.attributes }).filter((k) => /messages|arguments|result/.test(k))).toEqual([]);
  });

  it('exports contents only when an operator opts in, and then masked like logs', () => {
    const captured = receiver.spans.find((s) => s.name === 'chat gpt-y');
    expect(JSON.parse(String(captured?.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', content: expect.stringMatching(/^call me at 138\D+5678$/) },
    ]);
    expect(JSON.parse(String(captured?.attributes['gen_ai.output.messages']))).toEqual({
      content: expect.stringMatching(/^noted 138\D+5678$/),
      toolCalls: [],
    });
  });
});
