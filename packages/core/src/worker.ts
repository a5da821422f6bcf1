/**
 * `@rein/core/worker`: what the worker service (`@rein/worker`) needs beyond the public
 * index — its runtime, the step engine, the job table, the queues it takes from, the model
 * gateway, a service's life as a process. It imports nothing of `http/`, so a worker never
 * loads Fastify (`services/worker/test/no-http-shell.int.test.ts`).
 * INTERNAL: no stability promise; any name may change or go in any release. Each name is
 * one the worker imports (`test/infra/core-entries.test.ts`).
 */

export type { ModelGateway } from './adapters/model/model-gateway.js';
export { createProviderCompletion } from './adapters/model/providers.js';
export { HOUSEKEEPING_QUEUE, STEP_QUEUE } from './adapters/queue/job-catalog.js';
export { failJob, InvalidJobError, runJob, UnrecoverableJobError } from './adapters/queue/job-table.js';
export { SCHEDULE_QUEUE } from './adapters/queue/schedule-queue.js';
export { bullConnection } from './adapters/redis/redis.js';
export { createResilientModelGateway } from './adapters/resilience/resilient-model.js';
export { createWebhookDelivery } from './features/webhooks/webhook-delivery.js';
export { deliveryJobSchema, WEBHOOK_QUEUE, webhookRetryDelayMs } from './features/webhooks/webhook-dispatcher.js';
export { metricsAuthorized } from './policy/identity/credentials.js';
export { loadAppOrExit } from './process/load-app.js';
export { createWorkerRuntime, type WorkerRuntime } from './process/runtime.js';
export { closeOnSignals, exitOnStartError, serviceOptions } from './process/service-lifecycle.js';
export { workerJobs } from './process/worker-jobs.js';
export { workerShards } from './shared/config.js';
export { envelope } from './shared/errors.js';
export { queuePrefix, SCHEDULE_QUEUE_PREFIX, stepQueuePrefix, WEBHOOK_QUEUE_PREFIX } from './shared/keys.js';
export { loadOptionsOrExit } from './shared/options.js';
export { createStepEngine } from './step/step-engine.js';
export { backoffMs } from './step/step-jobs.js';
