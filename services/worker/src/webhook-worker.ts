import {
  bullConnection,
  createWebhookDelivery,
  deliveryJobSchema,
  type Runtime,
  WEBHOOK_QUEUE,
  WEBHOOK_QUEUE_PREFIX,
  webhookRetryDelayMs,
} from '@rein/core/internal';
import { type Job, Worker } from 'bullmq';

/**
 * Consumes the webhook queue: one job = one event for one webhook. A failed attempt
 * throws, and BullMQ retries the same job (same `webhook-id`) on the webhook backoff
 * schedule; the job's last attempt is logged as `gave_up`.
 */
export function createWebhookWorker(rt: Runtime): Worker {
  const { config, logger } = rt;
  const deliver = createWebhookDelivery({
    hooks: rt.webhookStore,
    metrics: rt.metrics,
    logger,
    timeoutMs: config.REIN_WEBHOOK_TIMEOUT_MS,
    allowPrivate: config.REIN_WEBHOOK_ALLOW_PRIVATE,
  });
  const worker = new Worker(
    WEBHOOK_QUEUE,
    async (job: Job) => {
      const attempt = job.attemptsMade + 1;
      return deliver(deliveryJobSchema.parse(job.data), attempt, attempt >= (job.opts.attempts ?? 1));
    },
    {
      connection: bullConnection(config, 'worker', logger),
      prefix: WEBHOOK_QUEUE_PREFIX,
      concurrency: config.WORKER_CONCURRENCY,
      settings: { backoffStrategy: (attemptsMade: number) => webhookRetryDelayMs(attemptsMade, config.REIN_WEBHOOK_RETRY_BASE_MS) },
    },
  );
  worker.on('error', (err) => logger.warn({ err: err.message }, 'webhook worker error'));
  return worker;
}
