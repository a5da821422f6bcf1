import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { DeliveryAttempt } from '@rein/contract';
import { Webhook as Signer } from 'standardwebhooks';
import { AddressRefusedError, isRefusedAddress, publicOnlyLookup } from '../../adapters/net/address-guard.js';
import { ReinError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { DeliveryJob, PushJob, WebhookJob } from './webhook-dispatcher.js';
import type { WebhookStore } from './webhook-store.js';

export interface WebhookDeliveryDeps {
  hooks: WebhookStore;
  metrics: Metrics;
  logger: Logger;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Resolves an A2A push notification's target (features/a2a/a2a-push.ts); without it, such a job is dropped. */
  pushTarget?: (job: PushJob) => Promise<DeliveryTarget | null>;
  now?: () => number;
}

/** A delivery the endpoint did not accept (non-2xx, timeout, connection error): retried with backoff. */
export class WebhookDeliveryFailedError extends ReinError {
  override readonly name = 'WebhookDeliveryFailedError';
  constructor(message: string) {
    super('webhook_delivery_failed', message, { retryable: true });
  }
}

interface Response {
  status: number;
}

/**
 * POSTs once through the address guard (no redirects followed); resolves with the status,
 * rejects on a network error, a refused address or the timeout (before the status line).
 * Webhooks and the decision log's checkpoint sink send through it.
 */
export function postGuarded(
  url: URL,
  body: string,
  headers: Record<string, string>,
  deps: Pick<WebhookDeliveryDeps, 'allowPrivate' | 'timeoutMs'>,
): Promise<Response> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!deps.allowPrivate && isIP(host) && isRefusedAddress(host))
    return Promise.reject(new AddressRefusedError(host, 'webhook_url_refused'));
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers, 'content-length': Buffer.byteLength(body).toString() },
        // Resolved and checked in one step, so the address connected to is the one checked.
        ...(deps.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      },
      (res) => {
        // The status line decides; the body is not ours to read, so a slow or huge one
        // cannot turn an accepted delivery into a failed one. The socket goes with it.
        resolve({ status: res.statusCode ?? 0 });
        res.destroy();
      },
    );
    // A deadline up to the status line, not an idle timeout: a trickling endpoint cannot hold a worker slot.
    const timer = setTimeout(() => req.destroy(new Error(`no response within ${deps.timeoutMs} ms`)), deps.timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', reject);
    req.end(body);
  });
}

/** Where one delivery goes, resolved when it is sent: a target deleted since drops its pending deliveries. */
export interface DeliveryTarget {
  url: string;
  body: string;
  /** Signs the delivery (Standard Webhooks): a webhook's secret, a push config's token. */
  signer: Signer;
  /** Sent beside the signature headers (a content type, A2A's token and `Authorization`). */
  headers: Record<string, string>;
  /** Bound fields of the delivery's log lines. */
  logged: Record<string, string>;
  /** Writes an attempt to the target's delivery log, where it keeps one. */
  record?(attempt: Omit<DeliveryAttempt, 'type'>): Promise<void>;
}

/**
 * Delivers one job to its target, signed per Standard Webhooks (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`): a webhook's event, or an A2A push notification
 * (its target resolved by `pushTarget`). Redirects are not followed (a redirect is a
 * non-2xx), so they cannot lead past the address check. A deleted webhook or push config
 * drops its pending deliveries.
 */
export function createWebhookDelivery(deps: WebhookDeliveryDeps) {
  const now = deps.now ?? Date.now;

  async function webhookTarget(job: WebhookJob): Promise<DeliveryTarget | null> {
    const hook = await deps.hooks.get(job.tenantId, job.webhookId);
    if (!hook) return null;
    return {
      url: hook.url,
      body: JSON.stringify({ type: job.type, timestamp: job.timestamp, data: job.data }),
      signer: new Signer(hook.secret),
      headers: {},
      logged: { webhookId: hook.id },
      record: (attempt) => deps.hooks.logAttempt(job.tenantId, hook.id, { ...attempt, type: job.type }),
    };
  }

  return async function deliver(job: DeliveryJob, attempt: number, lastAttempt: boolean): Promise<DeliveryAttempt['outcome'] | 'dropped'> {
    const target = 'kind' in job ? ((await deps.pushTarget?.(job)) ?? null) : await webhookTarget(job);
    if (!target) return 'dropped';
    const sentAt = new Date(now());
    const headers = {
      ...target.headers,
      'webhook-id': job.messageId,
      'webhook-timestamp': Math.floor(sentAt.getTime() / 1000).toString(),
      'webhook-signature': target.signer.sign(job.messageId, sentAt, target.body),
      'user-agent': 'Rein-Webhooks/1',
    };
    const started = performance.now();
    const record = async (outcome: DeliveryAttempt['outcome'], extra: { status?: number; error?: string }) => {
      deps.metrics.webhookDeliveries.inc({ outcome });
      await target.record?.({
        messageId: job.messageId,
        attempt,
        at: sentAt.toISOString(),
        outcome,
        ...extra,
        durationMs: Math.round(performance.now() - started),
      });
    };
    const logged = { ...target.logged, tenantId: job.tenantId };
    let failure: string;
    try {
      const res = await postGuarded(new URL(target.url), target.body, headers, deps);
      if (res.status >= 200 && res.status < 300) {
        await record('delivered', { status: res.status });
        return 'delivered';
      }
      failure = `endpoint answered ${res.status}`;
      await record(lastAttempt ? 'gave_up' : 'failed', { status: res.status, error: failure });
    } catch (err) {
      if (err instanceof AddressRefusedError) {
        await record('refused', { error: err.message });
        deps.logger.warn({ ...logged, err: err.message }, 'webhook delivery refused');
        return 'refused'; // not retried: the endpoint is not one Rein may call
      }
      failure = (err as Error).message;
      await record(lastAttempt ? 'gave_up' : 'failed', { error: failure });
    }
    deps.logger.warn({ ...logged, attempt, err: failure }, 'webhook delivery failed');
    throw new WebhookDeliveryFailedError(failure);
  };
}

export type WebhookDelivery = ReturnType<typeof createWebhookDelivery>;
