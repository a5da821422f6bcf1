import { freePort, startTestRedis, type TestRedis } from '@rein/core/testing';
import { createScriptedModelServer } from '@rein/scripted-model';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

let redis: TestRedis;
let fleet: Fleet;
let second: FastifyInstance;
let secondCalls = 0;
const secondKeys: string[] = [];

beforeAll(async () => {
  redis = await startTestRedis();
  // A second OpenAI-compatible endpoint with its own key: the provider `second`.
  second = createScriptedModelServer();
  second.addHook('onRequest', async (req) => {
    if (req.url === '/v1/chat/completions') {
      secondCalls += 1;
      secondKeys.push(String(req.headers.authorization));
    }
  });
  const port = await freePort();
  await second.listen({ port, host: '127.0.0.1' });
  fleet = await startFleet({
    redisUrl: redis.url,
    workers: 1,
    env: {
      REIN_PROVIDERS: JSON.stringify({ second: { baseURL: `http://127.0.0.1:${port}/v1`, apiKeyEnv: 'SECOND_PROVIDER_KEY' } }),
      SECOND_PROVIDER_KEY: 'second-provider-key',
      // The primary lives at the second provider; the fallback is the default provider's (OPENAI_BASE_URL).
      REIN_MODEL: 'second/rein-scripted',
      REIN_FALLBACK_MODELS: 'rein-scripted',
      REIN_MODEL_PRICES: JSON.stringify({
        'second/rein-scripted': { promptPerMTok: 1000, completionPerMTok: 1000 },
        'rein-scripted': { promptPerMTok: 0, completionPerMTok: 0 },
      }),
    },
  });
}, 60_000);
afterAll(async () => {
  await fleet?.stop();
  await second?.close();
  await redis?.stop();
});

type Trace = { steps: Array<{ model: string; costUsd: number }>; costUsd: number };
type Snapshots = { snapshots: Array<{ request: { model: string } }> };

async function answered(input: string) {
  const submitted = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input });
  expect(submitted.status).toBe(202);
  const id = submitted.body.id as string;
  await fleet.waitForRun(id, (r) => r.status === 'succeeded');
  const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body as Trace;
  return { id, trace };
}

describe('models from several providers', () => {
  it('calls the named provider with its own key, and records provider/model in the trace, the snapshot and the metrics', async () => {
    const { id, trace } = await answered('支持 7 天无理由退货吗？');
    expect(secondCalls).toBeGreaterThan(0);
    expect(new Set(secondKeys)).toEqual(new Set(['Bearer second-provider-key']));
    expect(trace.steps.length).toBeGreaterThan(0);
    for (const step of trace.steps) expect(step.model).toBe('second/rein-scripted');
    // Prices are per provider and model: this one is not free.
    expect(trace.costUsd).toBeGreaterThan(0);
    const { snapshots } = (await fleet.callApi('GET', `/v1/runs/${id}/snapshots`, KEYS.admin.key)).body as Snapshots;
    expect(snapshots.map((s) => s.request.model)).toEqual(trace.steps.map(() => 'second/rein-scripted'));
    const metrics = await (await fetch(`http://127.0.0.1:${fleet.workerMetricsPorts[0]}/metrics`)).text();
    expect(metrics).toMatch(/rein_model_request_duration_seconds_count\{[^}]*model="second\/rein-scripted"/);
  });

  it('falls back across providers when a provider is down', async () => {
    await second.close();
    const before = secondCalls;
    const { id, trace } = await answered('Do you support 7-day no-reason returns?');
    expect(secondCalls).toBe(before);
    expect(trace.steps.length).toBeGreaterThan(0);
    for (const step of trace.steps) expect(step.model).toBe('rein-scripted');
    expect(trace.costUsd).toBe(0);
    // The snapshot names the model that answered, not the primary that was down.
    const { snapshots } = (await fleet.callApi('GET', `/v1/runs/${id}/snapshots`, KEYS.admin.key)).body as Snapshots;
    expect(snapshots.map((s) => s.request.model)).toEqual(trace.steps.map(() => 'rein-scripted'));
  });
});
