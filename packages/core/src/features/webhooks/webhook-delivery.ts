import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { DeliveryAttempt } from '@rein/contract';
import { Webhook as Signer } from 'standardwebhooks';
import { AddressRefusedError, isRefusedAddress, publicOnlyLookup } from '../../adapters/net/address-guard.js';
import { ReinError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { DeliveryJob } from './webhook-dispatcher.js';
import type { WebhookStore } from './webhook-store.js';

export interface WebhookDeliveryDeps {
  hooks: WebhookStore;
  metrics: Metrics;
  logger: Logger;
  timeoutMs: number;
  allowPrivate: boolean;
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
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body).toString() },
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

/**
 * Delivers one event to one webhook, signed per Standard Webhooks (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`), and writes the attempt to the webhook's
 * log. Redirects are not followed (a redirect is a non-2xx), so they cannot lead past
 * the address check. A deleted webhook drops its pending deliveries.
 */
export function createWebhookDelivery(deps: WebhookDeliveryDeps) {
  const now = deps.now ?? Date.now;

  return async function deliver(job: DeliveryJob, attempt: number, lastAttempt: boolean): Promise<DeliveryAttempt['outcome'] | 'dropped'> {
    const hook = await deps.hooks.get(job.tenantId, job.webhookId);
    if (!hook) return 'dropped';
    const body = JSON.stringify({ type: job.type, timestamp: job.timestamp, data: job.data });
    const sentAt = new Date(now());
    const headers = {
      'webhook-id': job.messageId,
      'webhook-timestamp': Math.floor(sentAt.getTime() / 1000).toString(),
      'webhook-signature': new Signer(hook.secret).sign(job.messageId, sentAt, body),
      'user-agent': 'Rein-Webhooks/1',
    };
    const started = performance.now();
    const record = async (outcome: DeliveryAttempt['outcome'], extra: { status?: number; error?: string }) => {
      deps.metrics.webhookDeliveries.inc({ outcome });
      await deps.hooks.logAttempt(job.tenantId, hook.id, {
        messageId: job.messageId,
        type: job.type,
        attempt,
        at: sentAt.toISOString(),
        outcome,
        ...extra,
        durationMs: Math.round(performance.now() - started),
      });
    };
    let failure: string;
    try {
      const res = await postGuarded(new URL(hook.url), body, headers, deps);
      if (res.status >= 200 && res.status < 300) {
        await record('delivered', { status: res.status });
        return 'delivered';
      }
      failure = `endpoint answered ${res.status}`;
      await record(lastAttempt ? 'gave_up' : 'failed', { status: res.status, error: failure });
    } catch (err) {
      if (err instanceof AddressRefusedError) {
        await record('refused', { error: err.message });
        deps.logger.warn({ webhookId: hook.id, tenantId: job.tenantId, err: err.message }, 'webhook delivery refused');
        return 'refused'; // not retried: the endpoint is not one Rein may call
      }
      failure = (err as Error).message;
      await record(lastAttempt ? 'gave_up' : 'failed', { error: failure });
    }
    deps.logger.warn({ webhookId: hook.id, tenantId: job.tenantId, attempt, err: failure }, 'webhook delivery failed');
    throw new WebhookDeliveryFailedError(failure);
  };
}

export type WebhookDelivery = ReturnType<typeof createWebhookDelivery>;
