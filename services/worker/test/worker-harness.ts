import type { RunRecord } from '@rein/contract';
import { type AgentProfile, defineApp, type Principal, type RedisClient, type Tool } from '@rein/core';
import { loadConfig, type ModelGateway, type WorkerRuntime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startWorker } from '../src/start-worker.js';
import type { StepWorkers } from '../src/step-worker.js';

export const USER: Principal = { tenantId: 'acme', userId: 'alice', roles: ['user'] };

export interface WorkerFleetOptions {
  /** A model, or a factory given the runtime (to build the resilient gateway over its breakers). */
  model: ModelGateway | ((rt: WorkerRuntime) => ModelGateway);
  env?: Record<string, string>;
  tools?: Tool[];
  agents?: AgentProfile[];
}

/**
 * The real BullMQ worker, started by `startWorker` as the service starts it (in this
 * process, so tests can hand it a misbehaving model or tool) over a real Redis: jobs
 * go through the queue exactly as in production. The app is the order-assistant
 * example plus the test's own tools and agents.
 */
export function workerPerTest() {
  let redis: TestRedis;
  let current: { rt: WorkerRuntime; worker: StepWorkers; close(): Promise<void> } | undefined;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterEach(async () => {
    await current?.worker.close(true); // force: some tests leave a step hanging on purpose
    await current?.rt.redis.flushdb();
    await current?.close();
    current = undefined;
  });
  afterAll(async () => {
    await redis.stop();
  });

  return async (opts: WorkerFleetOptions) => {
    const config = loadConfig({
      REDIS_URL: redis.url,
      LOG_LEVEL: 'silent',
      REIN_JOB_LOCK_MS: '2000',
      REIN_STEP_ATTEMPTS: '2',
      WORKER_METRICS_PORT: '0',
      REIN_BIND_HOST: '127.0.0.1',
      ...opts.env,
    });
    const orderTools = orderApp.tools as (s: { redis: RedisClient }) => Tool[];
    const app = defineApp({
      agents: [...orderApp.agents, ...(opts.agents ?? [])],
      tools: (services) => [...orderTools(services), ...(opts.tools ?? [])],
      guards: orderApp.guards,
      handoffAnswer: orderApp.handoffAnswer,
    });
    const { model } = opts;
    const running = await startWorker(app, {
      config,
      handleSignals: false,
      model: (rt) => (typeof model === 'function' ? model(rt) : model),
    });
    const { runtime: rt, worker } = running;
    current = { rt, worker, close: running.close };
    return {
      rt,
      worker,
      async submit(input: string, extra: { principal?: Principal; agent?: string; limits?: Record<string, number> } = {}) {
        const { run } = await rt.runs.submit(extra.principal ?? USER, {
          input,
          ...(extra.agent ? { agent: extra.agent } : {}),
          ...(extra.limits ? { limits: extra.limits } : {}),
        });
        return run.id;
      },
      /** Polls until the run is terminal (bounded generously; never asserts on time). */
      async finished(id: string, timeoutMs = 30_000): Promise<RunRecord> {
        const until = Date.now() + timeoutMs;
        while (Date.now() < until) {
          const run = await rt.store.get(id);
          if (run && ['succeeded', 'failed', 'cancelled'].includes(run.status)) return run;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`run ${id} did not finish: ${JSON.stringify(await rt.store.get(id))}`);
      },
    };
  };
}
