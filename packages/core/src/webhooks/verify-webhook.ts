import { Webhook } from 'standardwebhooks';
import { type WebhookPayload, webhookPayloadSchema } from '../schemas/webhook.js';

/**
 * For receivers: checks a delivery's `webhook-signature` against the secret and its
 * `webhook-timestamp` against replay (5 minutes), and returns the parsed body
 * `{type, timestamp, data}`. Throws when either check fails. Pass the raw body, as
 * received: re-serialised JSON does not verify.
 */
export function verifyWebhook(
  secret: string,
  rawBody: string | Buffer,
  headers: Record<string, string | string[] | undefined>,
): WebhookPayload {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
  };
  const required = {
    'webhook-id': one('webhook-id'),
    'webhook-timestamp': one('webhook-timestamp'),
    'webhook-signature': one('webhook-signature'),
  };
  return webhookPayloadSchema.parse(new Webhook(secret).verify(rawBody, required));
}
