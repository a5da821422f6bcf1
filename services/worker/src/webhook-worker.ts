import {
  bullConnection,
  createWebhookDelivery,
  deliveryJobSchema,
  WEBHOOK_QUEUE,
  WEBHOOK_QUEUE_PREFIX,
  type WorkerRuntime,
  webhookRetryDelayMs,
} from '@rein/core/worker';
import { type Job, Worker } from 'bullmq';

/**
 * Consumes the webhook queue: one job = one event for one webhook, or one A2A push
 * notification for one config. A failed attempt
 * throws, and BullMQ retries the same job (same `webhook-id`) on the webhook backoff
 * schedule; the job's last attempt is logged as `gave_up`.
 */
export function createWebhookWorker(rt: WorkerRuntime): Worker {
  const { options, logger } = rt;
  const { webhooks } = options;
  const deliver = createWebhookDelivery({
    hooks: rt.webhookStore,
    metrics: rt.metrics,
    logger,
    timeoutMs: webhooks.timeoutMs,
    allowPrivate: webhooks.allowPrivate,
    pushTarget: rt.a2aPush.target,
  });
  const worker = new Worker(
    WEBHOOK_QUEUE,
    async (job: Job) => {
      const attempt = job.attemptsMade + 1;
      return deliver(deliveryJobSchema.parse(job.data), attempt, attempt >= (job.opts.attempts ?? 1));
    },
    {
      connection: bullConnection(options.redis, 'worker', rt.redisOutages, 'webhook worker'),
      prefix: WEBHOOK_QUEUE_PREFIX,
      concurrency: options.queue.workerConcurrency,
      settings: { backoffStrategy: (attemptsMade: number) => webhookRetryDelayMs(attemptsMade, webhooks.retryBaseMs) },
    },
  );
  worker.on('error', (err) => rt.redisOutages.error('webhook worker', err, 'webhook worker error'));
  return worker;
}
