import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreakers } from '../src/adapters/resilience/circuit-breakers.js';
import { FleetLimit } from '../src/adapters/resilience/fleet-limit.js';
import { createResilientModelGateway } from '../src/adapters/resilience/resilient-model.js';
import { setupTracing, type Tracing } from '../src/adapters/tracing/tracing-setup.js';
import { createPiiMasker } from '../src/shared/guards/pii-masker.js';
import { createLogger } from '../src/shared/logger.js';
import { createMetrics } from '../src/shared/metrics.js';
import { optionsFromEnv } from '../src/shared/options.js';
import { type OtlpReceiver, startOtlpReceiver, startTestRedis, type TestRedis } from '../src/testing/index.js';

const logger = createLogger('silent', 'test');
let server: TestRedis;
let redis: Redis;
let receiver: OtlpReceiver;
let tracing: Tracing;
beforeAll(async () => {
  server = await startTestRedis();
  redis = new Redis(server.url);
  receiver = await startOtlpReceiver();
  const options = optionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
  tracing = setupTracing(options.tracing, 'worker', createPiiMasker(), logger);
});
afterAll(async () => {
  await tracing.shutdown();
  await receiver.close();
  redis.disconnect();
  await server.stop();
});

describe('gen_ai.provider.name on chat spans', () => {
  it('names the configured provider a model id reaches, and openai for the default endpoint', async () => {
    const metrics = createMetrics('p');
    const breakers = new CircuitBreakers(
      redis,
      {
        errorThresholdPercentage: 50,
        resetTimeoutMs: 300,
        volumeThreshold: 2,
        rollingCountTimeoutMs: 10_000,
        probeTimeoutMs: 5_000,
        fleetWorkers: 2,
      },
      logger,
      metrics,
    );
    const gateway = createResilientModelGateway(
      ['vllm/llama3.1:8b'],
      async (model) => ({ model, content: 'ok', toolCalls: [], usage: { promptTokens: 1, completionTokens: 1 } }),
      {
        breakers,
        fleetLimit: new FleetLimit(redis),
        metrics,
        processConcurrency: 2,
        maxWaitMs: 100,
        fleetConcurrency: 2,
        providers: { vllm: { baseURL: 'http://127.0.0.1:1/v1' } },
      },
    );
    const request = { messages: [], tools: [], maxTokens: 10, timeoutMs: 1000 };
    await gateway.complete(request);
    await gateway.complete({ ...request, models: ['gpt-4o'] });
    // A first segment that names no provider is part of the default provider's model name.
    await gateway.complete({ ...request, models: ['meta-llama/Llama-3-8B'] });
    breakers.shutdown();
    await tracing.shutdown(); // flushes the batch

    const providerOf = (name: string) => receiver.spans.find((s) => s.name === name)?.attributes['gen_ai.provider.name'];
    expect(providerOf('chat vllm/llama3.1:8b')).toBe('vllm');
    expect(providerOf('chat gpt-4o')).toBe('openai');
    expect(providerOf('chat meta-llama/Llama-3-8B')).toBe('openai');
  });
});
