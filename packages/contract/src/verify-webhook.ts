import { Webhook } from 'standardwebhooks';
import { type WebhookPayload, webhookPayloadSchema } from './webhook.js';

/**
 * For receivers: checks a delivery's `webhook-signature` against the secret and its
 * `webhook-timestamp` against replay (5 minutes), and returns the parsed body
 * `{type, timestamp, data}`. Throws when either check fails. Pass the raw body, as
 * received (a string, or the bytes: a Node `Buffer` is a `Uint8Array`): re-serialised
 * JSON does not verify.
 */
export function verifyWebhook(
  secret: string,
  rawBody: string | Uint8Array,
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
  // standardwebhooks takes bytes only as a Node Buffer; decoded here it takes them in a browser too.
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  return webhookPayloadSchema.parse(new Webhook(secret).verify(body, required));
}
