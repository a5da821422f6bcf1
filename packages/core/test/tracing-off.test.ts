import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { chatSpan } from '../src/adapters/tracing/genai.js';
import { stepSpan, submitSpan } from '../src/adapters/tracing/rein-spans.js';
import { activeTraceparent, parseTraceparent } from '../src/adapters/tracing/trace-context.js';
import { setupTracing } from '../src/adapters/tracing/tracing-setup.js';
import { loadConfig } from '../src/shared/config.js';
import { createPiiMasker } from '../src/shared/guards/pii-masker.js';
import { createLogger } from '../src/shared/logger.js';
import { optionsFromEnv } from '../src/shared/options.js';

const logger = createLogger('silent', 'test');
const CALLER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracing with no OTLP endpoint', () => {
  const tracing = setupTracing(
    optionsFromEnv({ OTEL_SERVICE_NAME: 'x', REIN_OTEL_CAPTURE_CONTENT: 'true' }).tracing,
    'api',
    createPiiMasker(),
    logger,
  );

  it('registers no SDK: spans are non-recording no-ops and nothing can be exported', () => {
    expect(tracing).toMatchObject({ enabled: false });
    expect(tracing.capture).toBeUndefined();
    const span = trace.getTracer('rein').startSpan('probe');
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext().traceId).toBe('00000000000000000000000000000000');
  });

  it('still gives every run a W3C trace id: a new one, or the caller’s', async () => {
    const minted = await submitSpan(undefined, async (tp) => tp);
    expect(parseTraceparent(minted)).toMatchObject({ traceId: expect.stringMatching(/^[0-9a-f]{32}$/), traceFlags: 0 });
    expect(await submitSpan(CALLER, async (tp) => tp)).toBe(CALLER);
    expect(await submitSpan('00-not-a-traceparent', async (tp) => tp)).not.toBe('00-not-a-traceparent');
  });

  it('runs steps and model calls unchanged, with no active context to propagate', async () => {
    const reply = { model: 'm', content: 'hi', toolCalls: [], usage: { promptTokens: 1, completionTokens: 1 } };
    const out = await stepSpan('step', { runId: 'r', step: 0, traceparent: CALLER }, () =>
      chatSpan('m', 'openai', { messages: [], tools: [], maxTokens: 5, timeoutMs: 1000 }, undefined, async () => {
        expect(activeTraceparent()).toBeUndefined(); // no context manager: nothing leaks into job data
        return reply;
      }),
    );
    expect(out).toBe(reply);
  });
});

describe('OpenTelemetry settings', () => {
  it('refuse what Rein cannot do, naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
  });

  it('are off by a switch even with an endpoint', () => {
    const { tracing: off } = optionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' });
    expect(setupTracing(off, 'worker', createPiiMasker(), logger).enabled).toBe(false);
  });
});
