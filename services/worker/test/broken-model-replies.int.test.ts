import {
  createOpenAICompletion,
  createResilientModelGateway,
  type ModelDelta,
  type ModelGateway,
  type ModelReply,
  type ModelRequest,
  type WorkerRuntime,
} from '@rein/core/internal';
import { createScriptedModelServer } from '@rein/scripted-model';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { workerPerTest } from './worker-harness.js';

// The scripted model, counting the completions it was asked for.
let server: FastifyInstance;
let baseURL: string;
let calls = 0;
beforeAll(async () => {
  server = createScriptedModelServer({ faultControl: true });
  server.addHook('onRequest', async (req) => {
    if (req.url === '/v1/chat/completions') calls++;
  });
  baseURL = `${await server.listen({ port: 0, host: '127.0.0.1' })}/v1`;
});
afterAll(async () => {
  await server.close();
});
const wire = async (fault: Record<string, unknown>) => {
  await fetch(`${baseURL.replace('/v1', '')}/_faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
};
beforeEach(async () => {
  calls = 0;
  await wire({ mode: 'none' });
});

const ORDER_QUESTION = '查订单 A12345 状态，按政策说能否退';
const complete = (model: string, request: ModelRequest) => createOpenAICompletion({ baseURL, apiKey: 'test' })(model, request);
/** A streaming request (as the worker sends by default), collecting its deltas. */
const streaming = (extra: Partial<ModelRequest> = {}) => {
  const deltas: ModelDelta[] = [];
  const request: ModelRequest = {
    messages: [{ role: 'user', content: ORDER_QUESTION }],
    tools: [],
    maxTokens: 200,
    timeoutMs: 20_000,
    onDelta: (d) => deltas.push(d),
    ...extra,
  };
  return { request, deltas };
};

describe('a reply is complete only when the wire says so', () => {
  it('reads a whole JSON completion sent to a streaming request, tool call included', async () => {
    await wire({ mode: 'json-for-stream' });
    const { request, deltas } = streaming();
    const reply = await complete('m', request);
    expect(reply.toolCalls).toEqual([{ id: expect.any(String), name: 'query_order', arguments: JSON.stringify({ orderNo: 'A12345' }) }]);
    expect(reply.content).toBeTruthy();
    expect(deltas.some((d) => d.toolCall?.name === 'query_order')).toBe(true);
  });

  it.each([
    ['cut', /no finish_reason/],
    ['no-finish', /\[DONE\]\) without a finish_reason/],
    ['empty', /empty reply/],
    ['malformed-line', /not JSON/],
  ])('fails a %s stream as an invalid reply', async (mode, message) => {
    await wire({ mode });
    const { request } = streaming();
    await expect(complete('m', request)).rejects.toMatchObject({ code: 'model_reply_invalid', retryable: true, message });
  });

  it.each([
    ['stall', {}],
    ['trickle', { keepAliveMs: 20 }],
  ])('cuts a %s stream at the idle timeout (keep-alive comments are no progress)', async (mode, extra) => {
    await wire({ mode, ...extra });
    const { request } = streaming({ idleTimeoutMs: 300 });
    await expect(complete('m', request)).rejects.toMatchObject({ code: 'model_unavailable', message: /stalled: nothing for 300 ms/ });
  });

  it('cuts a trickling stream at the total timeout when no idle timeout is set', async () => {
    await wire({ mode: 'trickle', keepAliveMs: 20 });
    const { request } = streaming({ timeoutMs: 500 });
    await expect(complete('m', request)).rejects.toMatchObject({ code: 'model_unavailable', message: /no complete reply within 500 ms/ });
  });
});

const start = workerPerTest();
const BREAKER_ENV = { REIN_BREAKER_VOLUME: '2', REIN_MODEL: 'rein-scripted', REIN_STEP_ATTEMPTS: '3' };
const resilientModel = (rt: WorkerRuntime) =>
  createResilientModelGateway(['rein-scripted'], createOpenAICompletion({ baseURL, apiKey: 'test' }), {
    breakers: rt.breakers,
    fleetLimit: rt.fleetLimit,
    metrics: rt.metrics,
    processConcurrency: 4,
    fleetConcurrency: 8,
    maxWaitMs: 500,
  });

describe('a broken reply is never an answer', () => {
  it.each(['cut', 'no-finish', 'empty', 'malformed-line'])(
    'a %s stream: retried, never journaled, not held against the breaker, then model_reply_invalid',
    async (mode) => {
      await wire({ mode });
      const f = await start({ model: resilientModel, env: BREAKER_ENV });
      const run = await f.finished(await f.submit(ORDER_QUESTION));
      expect(run).toMatchObject({ status: 'failed', reason: 'model_reply_invalid', step: 0, usage: { totalTokens: 0 } });
      expect(calls).toBe(3); // one per attempt
      expect(await f.rt.journal.get(run.id, 0)).toBeNull();
      expect(await f.rt.store.steps(run.id)).toEqual([]);
      // Three failures over a volume of two would have opened it, were they counted.
      expect(await f.rt.breakers.isOpen('model:rein-scripted')).toBe(false);
      expect(await f.rt.metrics.registry.getSingleMetricAsString('rein_breaker_events_total')).not.toContain('event="open"');
    },
  );

  it('a gateway that answers a stream with JSON: the tool call runs and the run succeeds', async () => {
    await wire({ mode: 'json-for-stream' });
    const f = await start({ model: resilientModel, env: BREAKER_ENV });
    const run = await f.finished(await f.submit(ORDER_QUESTION));
    expect(run.status).toBe('succeeded');
    expect(run.finalAnswer).toBeTruthy();
    const [first] = await f.rt.store.steps(run.id);
    expect(first?.toolCalls.map((c) => c.name)).toEqual(['query_order']);
  });

  it('a stalled stream gives its slot back at the idle timeout: the step is tried again and the run ends with a reason', async () => {
    await wire({ mode: 'stall' });
    // One slot: a stall that held it would keep the retry (and everything else) from running.
    const f = await start({
      model: resilientModel,
      env: { ...BREAKER_ENV, WORKER_CONCURRENCY: '1', REIN_MODEL_IDLE_TIMEOUT_MS: '200', REIN_BREAKER_VOLUME: '50' },
    });
    const run = await f.finished(await f.submit(ORDER_QUESTION, { limits: { timeoutMs: 4000 } }));
    expect(run).toMatchObject({ status: 'failed', reason: 'model_unavailable', usage: { totalTokens: 0 } });
    expect(calls).toBeGreaterThan(1);
  });
});

/** A model that answers only when released, whatever its timeout says (a call no timeout can cut). */
const heldModel = () => {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  const model: ModelGateway & { calls: number; release: () => void } = {
    calls: 0,
    release,
    async complete(): Promise<ModelReply> {
      model.calls++;
      await released;
      return { model: 'held', content: 'late answer', toolCalls: [], usage: { promptTokens: 1, completionTokens: 1 } };
    },
  };
  return model;
};

describe('housekeeping cannot be starved', () => {
  it('ends runs deadline while every step slot is held, and a late answer does not make them succeeded', async () => {
    const model = heldModel();
    const f = await start({ model, env: { WORKER_CONCURRENCY: '2', REIN_SWEEP_INTERVAL_MS: '200' } });
    const ids = await Promise.all([1, 2, 3].map(() => f.submit('hello', { limits: { timeoutMs: 1500 } })));
    const runs = await Promise.all(ids.map((id) => f.finished(id)));
    expect(runs.map((r) => [r.status, r.reason])).toEqual(ids.map(() => ['failed', 'deadline']));
    expect(model.calls).toBe(2); // both slots held the whole time; the third run never got one
    model.release();
    await f.worker.close(); // the held steps finish (their commits are stale) before we look again
    for (const id of ids) expect(await f.rt.store.get(id)).toMatchObject({ status: 'failed', reason: 'deadline' });
  });

  it('runs on every shard: with shard 0 stopped, another shard still sweeps the whole fleet', async () => {
    const model = heldModel();
    const f = await start({ model, env: { REIN_QUEUE_SHARDS: '2', REIN_SWEEP_INTERVAL_MS: '200' } });
    const [zero, one] = f.rt.scheduler.housekeepingQueues;
    // Scheduled as the worker starts (not awaited by it).
    for (const queue of [zero, one]) {
      await vi.waitFor(async () =>
        expect((await queue!.getJobSchedulers()).map((s) => s.key).sort()).toEqual(['deadline-sweep', 'reaper']),
      );
    }
    await zero!.pause(); // as if its master were down
    const ids = await Promise.all([1, 2, 3, 4].map(() => f.submit('hello', { limits: { timeoutMs: 1000 } })));
    const runs = await Promise.all(ids.map((id) => f.finished(id)));
    expect(runs.map((r) => r.reason)).toEqual(ids.map(() => 'deadline'));
    model.release();
  });
});
