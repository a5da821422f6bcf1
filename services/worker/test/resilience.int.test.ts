import {
  createOpenAICompletion,
  createResilientModelGateway,
  type ModelRequest,
  reap,
  tenantKeys,
  type WorkerRuntime,
} from '@rein/core/internal';
import { createScriptedModelServer } from '@rein/scripted-model';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
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
const resilientModel = (models: string[]) => (rt: WorkerRuntime) =>
  createResilientModelGateway(models, createOpenAICompletion({ baseURL, apiKey: 'test' }), {
    breakers: rt.breakers,
    fleetLimit: rt.fleetLimit,
    metrics: rt.metrics,
    processConcurrency: 4,
    fleetConcurrency: 8,
    maxWaitMs: 500,
  });
const BREAKER_ENV = { REIN_BREAKER_VOLUME: '2', REIN_BREAKER_RESET_MS: '400', REIN_MODEL: 'rein-scripted' };
/** Polls a condition for up to 30 s (bounded generously; never asserts on time). */
async function eventually(check: () => Promise<boolean>, tries = 600) {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
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
    const f = await start({ model: resilientModel(['rein-scripted']), env: BREAKER_ENV });
    // Down until the breaker opens, not for a fixed time: a window started before the worker was spent by its start-up on a busy machine.
    await faults({ mode: 'error', status: 500 });
    const id = await f.submit('支持 7 天无理由退货吗？');
    const open = /rein_breaker_events_total\{breaker="model:rein-scripted",event="open",service="worker"\} [1-9]/;
    expect(await eventually(async () => open.test(await f.rt.metrics.registry.metrics()))).toBe(true);
    await faults({ mode: 'none' });
    const run = await f.finished(id);
    expect(run).toMatchObject({ status: 'succeeded', step: 2 });
    const metrics = await f.rt.metrics.registry.metrics();
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

describe("a run's own deadline is not the model's failure", () => {
  it('runs whose short deadlines cut their model calls fail, and leave the breaker every tenant shares closed', async () => {
    await faults({ mode: 'hang' });
    const f = await start({ model: resilientModel(['rein-scripted']), env: BREAKER_ENV });
    // More cut calls than the breaker's volume, each cut by its run's deadline, never by REIN_MODEL_TIMEOUT_MS.
    const ids = await Promise.all([1, 2, 3, 4].map(() => f.submit('支持 7 天无理由退货吗？', { limits: { timeoutMs: 1000 } })));
    for (const id of ids) expect(await f.finished(id)).toMatchObject({ status: 'failed', step: 0 });
    await faults({ mode: 'none' });
    expect(await f.rt.metrics.registry.getSingleMetricAsString('rein_breaker_events_total')).not.toMatch(/event="open"/);
    // Another tenant's run is not held back by them.
    expect(await f.finished(await f.submit('支持 7 天无理由退货吗？'))).toMatchObject({ status: 'succeeded' });
    expect(await f.rt.metrics.registry.getSingleMetricAsString('rein_step_delays_total')).not.toMatch(/cause="breaker_open"/);
  });
});

/** One pass of the reaper over the worker's runtime, counting every run as stale. */
const reapNow = (rt: WorkerRuntime) =>
  reap({
    store: rt.store,
    queueOf: () => rt.scheduler.queues[0]!, // the only shard here
    enqueue: rt.enqueue,
    approvals: rt.approvals,
    feed: rt.feed,
    applier: rt.applier,
    metrics: rt.metrics,
    logger: rt.logger,
    staleMs: 0,
  });

describe('the reaper', () => {
  it('finds a run whose step job was lost, repairs it, and counts the repair', async () => {
    const f = await start({ model: resilientModel(['rein-scripted']) });
    const queue = f.rt.scheduler.queues[0]!; // the only shard here
    await queue.pause();
    const id = await f.submit('支持 7 天无理由退货吗？');
    await (await queue.getJob(`${id}-0`))?.remove();
    await queue.resume();
    const repaired = await reapNow(f.rt);
    expect(repaired).toBe(1);
    expect((await f.finished(id)).status).toBe('succeeded');
    expect(await f.rt.metrics.registry.getSingleMetricAsString('rein_reaper_repairs_total')).toContain('kind="lost_step_job"');
  });

  it("charges a finished run's usage to its tenant once, when the charge after its commit was lost", async () => {
    const f = await start({ model: resilientModel(['rein-scripted']) });
    // Every charge after a commit dies, as if the process crashed between the two writes.
    const lost = vi.spyOn(f.rt.quotas, 'charge').mockRejectedValue(new Error('crashed after the commit'));
    const run = await f.finished(await f.submit('支持 7 天无理由退货吗？'));
    lost.mockRestore();
    const usage = tenantKeys(run.tenantId).usage(new Date().toISOString().slice(0, 10));
    expect(run.usage.totalTokens).toBeGreaterThan(0);
    expect(Number(await f.rt.redis.hget(usage, 'tokens'))).toBe(0);
    await reapNow(f.rt);
    expect(Number(await f.rt.redis.hget(usage, 'tokens'))).toBe(run.usage.totalTokens);
    // Charging again (a retried reaper, a late step) adds nothing.
    expect(await f.rt.quotas.charge(run)).toBe(0);
    expect(Number(await f.rt.redis.hget(usage, 'tokens'))).toBe(run.usage.totalTokens);
  });

  it('finishes what a crashed finishing process left undone: the run.finished webhook, the indexes, the tenant slot', async () => {
    const f = await start({ model: resilientModel(['rein-scripted']) });
    // The process that ends the run dies right after that commit: its charge is the first follow-up.
    const lost = vi.spyOn(f.rt.quotas, 'charge').mockRejectedValue(new Error('crashed after the commit'));
    const finishHook = vi.spyOn(f.rt.dispatcher, 'onRunFinished');
    const run = await f.finished(await f.submit('支持 7 天无理由退货吗？'));
    lost.mockRestore();
    const t = tenantKeys(run.tenantId);
    expect(finishHook).not.toHaveBeenCalled();
    expect(await f.rt.redis.sismember(t.active, run.id)).toBe(1); // its tenant's concurrency slot is still taken
    await reapNow(f.rt);
    expect(finishHook).toHaveBeenCalledTimes(1);
    expect(finishHook.mock.calls[0]?.[0]).toMatchObject({ id: run.id, status: run.status });
    expect(await f.rt.redis.sismember(t.active, run.id)).toBe(0);
    expect(await f.rt.redis.zscore(t.runsByStatus('running'), run.id)).toBeNull();
    expect(await f.rt.redis.zscore(t.runsByStatus(run.status), run.id)).not.toBeNull();
    expect((await f.rt.store.activeRuns()).map((a) => a.runId)).not.toContain(run.id);
    expect(await f.rt.metrics.registry.getSingleMetricAsString('rein_reaper_repairs_total')).toContain('kind="unfinished_finish"');
  });

  it('judges a run by its last change, not its index score, and re-scores one that moved since', async () => {
    const f = await start({ model: resilientModel(['rein-scripted']) });
    const queue = f.rt.scheduler.queues[0]!; // the only shard here
    await queue.pause(); // the run stays queued, its step job waiting: healthy
    const id = await f.submit('支持 7 天无理由退货吗？');
    // Indexed an hour ago (the index is written on status changes, not on every step).
    await f.rt.redis.zadd('rein:active-runs', Date.now() - 3_600_000, id);
    const run = await f.rt.store.require(id);
    const repaired = await reap({
      store: f.rt.store,
      queueOf: () => queue,
      enqueue: f.rt.enqueue,
      approvals: f.rt.approvals,
      feed: f.rt.feed,
      applier: f.rt.applier,
      metrics: f.rt.metrics,
      logger: f.rt.logger,
      staleMs: 60_000,
    });
    expect(repaired).toBe(0);
    expect(Number(await f.rt.redis.zscore('rein:active-runs', id))).toBe(Date.parse(run.updatedAt));
    await queue.resume();
    expect((await f.finished(id)).status).toBe('succeeded');
  });

  it('promotes a step job left delayed past its time (a lost promotion) instead of counting it live', async () => {
    const f = await start({ model: resilientModel(['rein-scripted']) });
    const [worker] = f.worker.workers;
    await worker?.pause(true); // nobody fetches, so nobody promotes
    const queue = f.rt.scheduler.queues[0]!; // the only shard here
    const id = await f.submit('支持 7 天无理由退货吗？');
    const jobId = `${id}-0`;
    await (await queue.getJob(jobId))?.remove();
    await queue.add('step', { runId: id, step: 0 }, { jobId, delay: 3_600_000 });
    // Its time came a minute ago and no worker promoted it: what a lost marker leaves behind.
    await f.rt.redis.zadd(queue.keys.delayed as string, (Date.now() - 60_000) * 0x1000, jobId);
    const repaired = await reapNow(f.rt);
    expect(repaired).toBe(1);
    expect(await (await queue.getJob(jobId))?.getState()).toBe('waiting');
    expect(await f.rt.metrics.registry.getSingleMetricAsString('rein_reaper_repairs_total')).toContain('kind="stranded_delayed_job"');
    worker?.resume();
    expect((await f.finished(id)).status).toBe('succeeded');
  });
});
