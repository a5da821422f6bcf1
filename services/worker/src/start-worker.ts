import { createServer } from 'node:http';
import type { App, RunningService, ServiceOptions } from '@rein/core';
import {
  closeOnSignals,
  createProviderCompletion,
  createResilientModelGateway,
  createWorkerRuntime,
  envelope,
  exitOnStartError,
  type ModelGateway,
  metricsAuthorized,
  serviceOptions,
  type WorkerRuntime,
} from '@rein/core/worker';
import { createStepWorker, type StepWorkers } from './step-worker.js';
import { createWebhookWorker } from './webhook-worker.js';

export interface WorkerOptions extends ServiceOptions {
  /** The model the steps call; default: REIN_MODEL and its fallbacks at their providers, behind breakers and bulkheads. */
  model?: (rt: WorkerRuntime) => ModelGateway;
}

/** The model gateway of the stock worker: the configured models at their providers, each behind its breaker and bulkheads. */
export function configuredModel(rt: WorkerRuntime): ModelGateway {
  const { model } = rt.options;
  return createResilientModelGateway(
    [model.name, ...model.fallbacks],
    createProviderCompletion(model.providers, { baseURL: model.openaiBaseUrl, apiKey: model.openaiApiKey }),
    {
      breakers: rt.breakers,
      fleetLimit: rt.fleetLimit,
      metrics: rt.metrics,
      processConcurrency: model.processConcurrency,
      fleetConcurrency: model.fleetConcurrency,
      maxWaitMs: rt.options.resilience.bulkheadWaitMs,
      captureContent: rt.tracing.capture,
      providers: model.providers,
    },
  );
}

/**
 * A step worker over an app, as the stock `@rein/worker` service runs it: takes steps
 * from the queue, serves /metrics and /healthz on WORKER_METRICS_PORT, and on close
 * stops taking jobs and lets the steps in hand finish (or their locks lapse).
 */
export async function startWorker(
  app: App,
  options: WorkerOptions = {},
): Promise<RunningService & { runtime: WorkerRuntime; worker: StepWorkers }> {
  const compiled = serviceOptions(options);
  const { http } = compiled;
  const rt = await createWorkerRuntime(compiled, 'worker', app).catch(exitOnStartError);
  const worker = createStepWorker(rt, (options.model ?? configuredModel)(rt));
  const webhookWorker = createWebhookWorker(rt);

  const metrics = createServer(async (req, res) => {
    if (req.url === '/metrics' && !metricsAuthorized(http.metricsToken, req.headers.authorization)) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify(envelope('unauthorized', 'a metrics token is required')));
    } else if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': rt.metrics.registry.contentType });
      res.end(await rt.metrics.registry.metrics());
    } else if (req.url === '/healthz') {
      res.writeHead(worker.isRunning() ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: worker.isRunning(), pid: process.pid }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => metrics.listen(http.workerMetricsPort, http.bindHost, resolve));
  rt.logger.info(
    { concurrency: compiled.queue.workerConcurrency, metricsPort: http.workerMetricsPort, model: compiled.model.name },
    'worker started',
  );
  const running = {
    runtime: rt,
    worker,
    async close() {
      await Promise.all([worker.close(), webhookWorker.close()]);
      metrics.close();
      await rt.close();
    },
  };
  if (options.handleSignals ?? true) closeOnSignals(running, 'worker');
  return running;
}
