import { createOpenAICompletion, createResilientModelGateway, type ModelRequest, type Runtime, reap } from '@rein/core';
import { createScriptedModelServer } from '@rein/scripted-model';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { workerPerTest } from './worker-harness.js';

let server: FastifyInstance;
let baseURL: string;
beforeAll(async () => {
  server = createScriptedModelServer({ faultControl: true });
  baseURL = `${await server.listen({ port: 0, host: '127.0.0.1' })}/v1`;
});
afterAll(async () => {
  await server.close();
});
const faults = async (fault: Record<string, unknown>) => {
  await fetch(`${baseURL.replace('/v1', '')}/_faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
};
beforeEach(() => faults({ mode: 'none' }));

const start = workerPerTest();
const resilientModel = (models: string[]) => (rt: Runtime) =>
  createResilientModelGateway(models, createOpenAICompletion({ baseURL, apiKey: 'test' }), {
    breakers: rt.breakers,
    fleetLimit: rt.fleetLimit,
    metrics: rt.metrics,
    processConcurrency: 4,
    fleetConcurrency: 8,
    maxWaitMs: 500,
  });
const BREAKER_ENV = { REIN_BREAKER_VOLUME: '2', REIN_BREAKER_RESET_MS: '400', REIN_MODEL: 'rein-scripted' };
const request: ModelRequest = {
  messages: [{ role: 'user', content: '支持 7 天无理由退货吗？' }],
  tools: [],
  maxTokens: 100,
  timeoutMs: 5000,
};

describe('the model gateway', () => {
  it('honours Retry-After on 429 and marks it retryable', async () => {
    await faults({ mode: 'error', status: 429, retryAfterSeconds: 7 });
    const complete = createOpenAICompletion({ baseURL, apiKey: 'test' });
    await expect(complete('m', request)).rejects.toMatchObject({ code: 'model_unavailable', retryable: true, retryAfterMs: 7000 });
  });

  it('does not retry a 4xx that will not change', async () => {
    await faults({ mode: 'error', status: 400 });
    const complete = createOpenAICompletion({ baseURL, apiKey: 'test' });
    await expect(complete('m', request)).rejects.toMatchObject({ code: 'model_rejected', retryable: false });
  });
});

describe('a flaky model provider costs time, never runs', () => {
  it('opens the breaker on 500s, delays steps without spending them, and finishes once the model recovers', async () => {
    await faults({ mode: 'error', status: 500, untilMs: Date.now() + 1500 });
    const f = await start({ model: resilientModel(['rein-scripted']), env: BREAKER_ENV });
    const run = await f.finished(await f.submit('支持 7 天无理由退货吗？'));
    expect(run).toMatchObject({ status: 'succeeded', step: 2 });
    const metrics = await f.rt.metrics.registry.metrics();
    expect(metrics).toMatch(/rein_breaker_events_total\{breaker="model:rein-scripted",event="open",service="worker"\} [1-9]/);
    expect(metrics).toMatch(/rein_step_delays_total\{cause="(model_unavailable|breaker_open)",service="worker"\} [1-9]/);
    // Every answered step was journaled once: the outage consumed no step and no tokens.
    expect((await f.rt.store.steps(run.id)).map((s) => s.index)).toEqual([0, 1]);
  });

  it('falls back to the next model when the primary is down, and the trace says which model answered', async () => {
    await faults({ mode: 'error', status: 503, models: ['rein-scripted'] });
    const f = await start({ model: resilientModel(['rein-scripted', 'backup-model']), env: BREAKER_ENV });
    const run = await f.finished(await f.submit('支持 7 天无理由退货吗？'));
    expect(run.status).toBe('succeeded');
    expect((await f.rt.store.steps(run.id)).map((s) => s.model)).toEqual(['backup-model', 'backup-model']);
  });

  it('fails the run model_unavailable only when its deadline passes', async () => {
    await faults({ mode: 'error', status: 500 });
    // A fast sweeper as well: whether the worker or the sweeper notices the deadline, the reason is the model.
    const f = await start({
      model: resilientModel(['rein-scripted']),
      env: { ...BREAKER_ENV, REIN_SWEEP_INTERVAL_MS: '200' },
    });
    const run = await f.finished(await f.submit('支持 7 天无理由退货吗？', { limits: { timeoutMs: 2500 } }));
    expect(run).toMatchObject({ status: 'failed', reason: 'model_unavailable', step: 0, usage: { totalTokens: 0 } });
  });
});

describe('the reaper', () => {
  it('finds a run whose step job was lost, repairs it, and counts the repair', async () => {
    const f = await start({ model: resilientModel(['rein-scripted']) });
    await f.rt.scheduler.queue.pause();
    const id = await f.submit('支持 7 天无理由退货吗？');
    await (await f.rt.scheduler.queue.getJob(`${id}-0`))?.remove();
    await f.rt.scheduler.queue.resume();
    const repaired = await reap({
      store: f.rt.store,
      queue: f.rt.scheduler.queue,
      enqueue: f.rt.enqueue,
      approvals: f.rt.approvals,
      metrics: f.rt.metrics,
      staleMs: 0,
    });
    expect(repaired).toBe(1);
    expect((await f.finished(id)).status).toBe('succeeded');
    expect(await f.rt.metrics.registry.getSingleMetricAsString('rein_reaper_repairs_total')).toContain('kind="lost_step_job"');
  });
});
