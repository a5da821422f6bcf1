import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKey } from '@rein/contract';
import { z } from 'zod';

/**
 * What a one-click link carries, signed: the approval, the arguments' hash it was minted
 * for, the tenant and user it decides as, the verdict, its expiry (ms) and a nonce (its
 * single use; an approve link and its reject link share one, so using either spends both).
 */
export const linkPayloadSchema = z
  .object({
    a: z.string().min(1).max(200),
    h: z.string().regex(/^[0-9a-f]{64}$/),
    t: z.string().min(1).max(128),
    u: z.string().min(1).max(128),
    v: z.enum(['approve', 'reject']),
    e: z.number().int().positive(),
    n: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/),
  })
  .strict();
export type LinkPayload = z.infer<typeof linkPayloadSchema>;

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const mac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest();

/** `<payload>.<HMAC-SHA256 of payload>`, both base64url: safe in a URL path, mail and chat. */
export function signLink(secret: string, payload: LinkPayload): string {
  const body = b64url(JSON.stringify(payload));
  return `${body}.${b64url(mac(secret, body))}`;
}

/** The payload of a link this secret signed, or null for anything else (forged, altered, malformed). */
export function readLink(secret: string, token: string): LinkPayload | null {
  if (token.length > 2000) return null;
  const [body, sig, extra] = token.split('.');
  if (!body || !sig || extra !== undefined) return null;
  const expected = mac(secret, body);
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const parsed = linkPayloadSchema.safeParse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * The links' signing secret: REIN_LINK_SECRET, or one derived from the API keys (every
 * process of a fleet shares them, so all agree; changing the keys invalidates every link).
 * With no key (company sign-in only) nothing secret is there to derive from: a random
 * secret of this process, so no link can be forged (and none outlives the process).
 */
export function linkSecret(configured: string | undefined, keys: readonly ApiKey[]): string {
  if (configured) return configured;
  if (keys.length === 0) return randomBytes(32).toString('hex');
  const material = keys
    .map((k) => k.key)
    .sort()
    .join('\n');
  return createHash('sha256').update(`rein-link-secret\n${material}`).digest('hex');
}
