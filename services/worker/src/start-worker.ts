import { createServer } from 'node:http';
import type { App, RunningService, ServiceOptions } from '@rein/core';
import {
  closeOnSignals,
  createProviderCompletion,
  createResilientModelGateway,
  createRuntime,
  envelope,
  exitOnStartError,
  type ModelGateway,
  metricsAuthorized,
  type Runtime,
  serviceConfig,
} from '@rein/core/internal';
import { createStepWorker, type StepWorkers } from './step-worker.js';
import { createWebhookWorker } from './webhook-worker.js';

export interface WorkerOptions extends ServiceOptions {
  /** The model the steps call; default: REIN_MODEL and its fallbacks at their providers, behind breakers and bulkheads. */
  model?: (rt: Runtime) => ModelGateway;
}

/** The model gateway of the stock worker: the configured models at their providers, each behind its breaker and bulkheads. */
export function configuredModel(rt: Runtime): ModelGateway {
  const { config } = rt;
  return createResilientModelGateway(
    [config.REIN_MODEL, ...config.REIN_FALLBACK_MODELS],
    createProviderCompletion(config.REIN_PROVIDERS, { baseURL: config.OPENAI_BASE_URL, apiKey: config.OPENAI_API_KEY }),
    {
      breakers: rt.breakers,
      fleetLimit: rt.fleetLimit,
      metrics: rt.metrics,
      processConcurrency: config.REIN_MODEL_PROCESS_CONCURRENCY,
      fleetConcurrency: config.REIN_MODEL_FLEET_CONCURRENCY,
      maxWaitMs: config.REIN_BULKHEAD_WAIT_MS,
      captureContent: rt.tracing.capture,
      providers: config.REIN_PROVIDERS,
    },
  );
}

/**
 * A step worker over an app, as the stock `@rein/worker` service runs it: takes steps
 * from the queue, serves /metrics and /healthz on WORKER_METRICS_PORT, and on close
 * stops taking jobs and lets the steps in hand finish (or their locks lapse).
 */
export async function startWorker(app: App, options: WorkerOptions = {}): Promise<RunningService & { worker: StepWorkers }> {
  const config = serviceConfig(options);
  const rt = await createRuntime(config, 'worker', 'worker', app, { mcp: true }).catch(exitOnStartError);
  const worker = createStepWorker(rt, (options.model ?? configuredModel)(rt));
  const webhookWorker = createWebhookWorker(rt);

  const metrics = createServer(async (req, res) => {
    if (req.url === '/metrics' && !metricsAuthorized(config.REIN_METRICS_TOKEN, req.headers.authorization)) {
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
  await new Promise<void>((resolve) => metrics.listen(config.WORKER_METRICS_PORT, config.REIN_BIND_HOST, resolve));
  rt.logger.info(
    { concurrency: config.WORKER_CONCURRENCY, metricsPort: config.WORKER_METRICS_PORT, model: config.REIN_MODEL },
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
