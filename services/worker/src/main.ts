import { createServer } from 'node:http';
import { createOpenAICompletion, createResilientModelGateway, createRuntime, loadConfigOrExit } from '@rein/core';
import { createStepWorker } from './step-worker.js';
import { createWebhookWorker } from './webhook-worker.js';

const config = loadConfigOrExit();
const rt = await createRuntime(config, 'worker', 'worker');
const model = createResilientModelGateway(
  [config.REIN_MODEL, ...config.REIN_FALLBACK_MODELS],
  createOpenAICompletion({ baseURL: config.OPENAI_BASE_URL, apiKey: config.OPENAI_API_KEY }),
  {
    breakers: rt.breakers,
    fleetLimit: rt.fleetLimit,
    metrics: rt.metrics,
    processConcurrency: config.REIN_MODEL_PROCESS_CONCURRENCY,
    fleetConcurrency: config.REIN_MODEL_FLEET_CONCURRENCY,
    maxWaitMs: config.REIN_BULKHEAD_WAIT_MS,
  },
);
const worker = createStepWorker(rt, model);
const webhookWorker = createWebhookWorker(rt);

const metrics = createServer(async (req, res) => {
  if (req.url === '/metrics') {
    res.writeHead(200, { 'content-type': rt.metrics.registry.contentType });
    res.end(await rt.metrics.registry.metrics());
  } else if (req.url === '/healthz') {
    res.writeHead(worker.isRunning() ? 200 : 503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: worker.isRunning() }));
  } else {
    res.writeHead(404).end();
  }
});
metrics.listen(config.WORKER_METRICS_PORT, config.REIN_BIND_HOST);
rt.logger.info(
  { concurrency: config.WORKER_CONCURRENCY, metricsPort: config.WORKER_METRICS_PORT, model: config.REIN_MODEL },
  'worker started',
);

// Graceful: stop taking jobs, let the steps in hand finish (or their locks lapse), then exit.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    rt.logger.info({ signal }, 'worker shutting down');
    await Promise.all([worker.close(), webhookWorker.close()]);
    metrics.close();
    await rt.close();
    process.exit(0);
  });
}
