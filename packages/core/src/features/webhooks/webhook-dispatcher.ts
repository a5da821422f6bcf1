import { createHash } from 'node:crypto';
import type { ApprovalFeedEvent, RunRecord } from '@rein/contract';
import { type WebhookEventType, webhookEventTypeSchema } from '@rein/contract';
import { type ConnectionOptions, type JobsOptions, Queue } from 'bullmq';
import { z } from 'zod';
import { WEBHOOK_QUEUE_PREFIX } from '../../shared/keys.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { RunEndPlug } from '../run-end.js';
import type { WebhookStore } from './webhook-store.js';

export const WEBHOOK_QUEUE = 'rein-webhooks';

/** One delivery of one event to one webhook; every retry reuses `messageId` (the `webhook-id` header). */
export const webhookJobSchema = z.object({
  webhookId: z.string().min(1),
  tenantId: z.string().min(1),
  messageId: z.string().min(1),
  type: webhookEventTypeSchema,
  timestamp: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type WebhookJob = z.infer<typeof webhookJobSchema>;

/**
 * One A2A push notification (features/a2a/a2a-push.ts): `data`, the task's `StreamResponse`
 * as it was at one change of state, for the config stored under `config` in the task's hash.
 */
export const pushJobSchema = z.object({
  kind: z.literal('a2a-push'),
  tenantId: z.string().min(1),
  taskId: z.string().min(1),
  config: z.string().min(1),
  messageId: z.string().min(1),
  data: z.record(z.string(), z.unknown()),
});
export type PushJob = z.infer<typeof pushJobSchema>;

/** What the webhook queue carries: a webhook's event, or an A2A push notification, delivered alike. */
export const deliveryJobSchema = z.union([pushJobSchema, webhookJobSchema]);
export type DeliveryJob = z.infer<typeof deliveryJobSchema>;

/** Retry delays grow fourfold from `baseMs` up to 4 h: with the 5 s default, 13 attempts span over 24 h. */
export const WEBHOOK_ATTEMPTS = 13;
const MAX_RETRY_DELAY_MS = 4 * 3600_000;
export const webhookRetryDelayMs = (attemptsMade: number, baseMs: number) =>
  Math.min(MAX_RETRY_DELAY_MS, baseMs * 4 ** Math.max(0, attemptsMade - 1));

export const deliveryJobOptions: JobsOptions = {
  attempts: WEBHOOK_ATTEMPTS,
  backoff: { type: 'webhook' },
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/** The same event for the same webhook always gets the same id: emitting it twice enqueues it once. */
const messageIdOf = (webhookId: string, type: WebhookEventType, key: string) =>
  createHash('sha256').update(`${webhookId}\n${type}\n${key}`).digest('hex').slice(0, 32);

/** An approval's page in the approver console (`/console?approval=<id>`). */
export const approvalConsoleUrl = (consoleUrl: string, approvalId: string) =>
  `${consoleUrl}/console?approval=${encodeURIComponent(approvalId)}`;

/**
 * Turns a tenant's events into delivery jobs for its subscribed webhooks.
 *
 * It is called where the events are already published — the approval feed (approval
 * and effect events) and the run store's terminal commit (run.finished) — so it costs
 * one HVALS per event, i.e. per approval and per finished run, never per step. Emitting
 * happens after the commit. For run.finished a crash in between is made up by the reaper
 * (the run stays in the active index until its finish hook has run); for approval events,
 * by the reaper too, from the approval feed's outbox (staged before the commit, cleared once
 * enqueued here). A delivery's id is its event's, so emitting again within a day is a
 * no-op. A dropped emit is logged, never thrown into the engine, whose commit already stands.
 */
export class WebhookDispatcher {
  readonly queue: Queue;

  private readonly now: () => number;
  private readonly consoleUrl: string | undefined;

  constructor(
    connection: ConnectionOptions,
    private readonly hooks: WebhookStore,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    /** `consoleUrl`: the approver console's public base URL (REIN_CONSOLE_URL). */
    opts: { now?: () => number; consoleUrl?: string } = {},
  ) {
    this.queue = new Queue(WEBHOOK_QUEUE, { connection, prefix: WEBHOOK_QUEUE_PREFIX });
    this.now = opts.now ?? Date.now;
    this.consoleUrl = opts.consoleUrl;
  }

  /** Enqueues `data` for every webhook of the tenant subscribed to `type`; `key` identifies the event. `false`: not enqueued. */
  async emit(tenantId: string, type: WebhookEventType, key: string, data: Record<string, unknown>): Promise<boolean> {
    try {
      const hooks = (await this.hooks.all(tenantId)).filter((h) => h.events.includes(type));
      const timestamp = new Date(this.now()).toISOString();
      for (const hook of hooks) {
        const id = messageIdOf(hook.id, type, key);
        const job = webhookJobSchema.parse({ webhookId: hook.id, tenantId, messageId: `msg_${id}`, type, timestamp, data });
        await this.queue.add('deliver', job, { ...deliveryJobOptions, jobId: `wh-${id}` });
      }
      return true;
    } catch (err) {
      this.metrics.webhookDeliveries.inc({ outcome: 'not_enqueued' });
      this.logger.error({ err: (err as Error).message, tenantId, type }, 'could not enqueue webhook deliveries');
      return false;
    }
  }

  /**
   * Enqueues an A2A push notification; `key` identifies it, so the same one enqueued twice
   * (two processes seeing one change, a finish hook run again) is delivered once. Throws
   * when it cannot enqueue: the caller decides whether that is retried.
   */
  async push(job: PushJob, key: string): Promise<void> {
    await this.queue.add('deliver', pushJobSchema.parse(job), { ...deliveryJobOptions, jobId: `a2a-${key}` });
  }

  /** For the approval feed: what approvers are told, webhooks are told too. */
  readonly onFeedEvent = async (tenantId: string, e: ApprovalFeedEvent): Promise<boolean> => {
    const { type, ...data } = e;
    // Each escalation of a chain is an event of its own.
    const key =
      e.type === 'effect.uncertain'
        ? `${e.runId}:${e.toolCallId}`
        : e.type === 'approval.escalated'
          ? `${e.approvalId}:${e.at}`
          : `${e.approvalId}:${e.status}`;
    // An approval someone must decide links to its page in the console, for a chat or mail integration.
    const asks = this.consoleUrl && (e.type === 'approval.requested' || e.type === 'approval.escalated');
    return this.emit(
      tenantId,
      type,
      key,
      asks ? { ...data, consoleUrl: approvalConsoleUrl(this.consoleUrl as string, e.approvalId) } : data,
    );
  };

  /** For the run store: once per run, after the commit that ended it. */
  readonly onRunFinished = async (run: RunRecord): Promise<void> => {
    await this.emit(run.tenantId, 'run.finished', run.id, {
      runId: run.id,
      status: run.status,
      reason: run.reason ?? null,
      agent: run.agent,
      userId: run.userId,
      ...(run.sessionId ? { sessionId: run.sessionId } : {}),
      finalAnswer: run.finalAnswer ?? null,
      usage: run.usage,
      at: run.updatedAt,
    });
  };

  close() {
    return this.queue.close();
  }
}

/** A finished run's webhooks; a replay fires none (its calls never reached the world). */
export const webhookPlug = (dispatcher: Pick<WebhookDispatcher, 'onRunFinished'>): RunEndPlug => ({
  feature: 'webhooks',
  async finished(run) {
    if (run.mode !== 'replay') await dispatcher.onRunFinished(run);
  },
});
