import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKey } from '@rein/contract';

/** A token as HTTP lets it be written (RFC 7235 token68 and friends): printable ASCII, no spaces. */
const TOKEN = /^[\x21-\x7e]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The API key a presented token belongs to, if any. Both sides are hashed first, so
 * every comparison is between 32-byte digests: constant time whatever the token's
 * length or characters, and a non-ASCII token cannot make `timingSafeEqual` throw.
 */
export function findApiKey(keys: ApiKey[], token: string | undefined): ApiKey | undefined {
  if (token === undefined) return undefined;
  const presented = digest(token);
  let found: ApiKey | undefined;
  for (const key of keys) if (timingSafeEqual(digest(key.key), presented) && !found) found = key;
  return found;
}

/**
 * Whether a request may read `/metrics` (which names tenants and agents): always when no
 * token is configured (REIN_METRICS_TOKEN unset), else only with `Authorization: Bearer <token>`.
 */
export function metricsAuthorized(token: string | undefined, header: string | undefined): boolean {
  if (token === undefined) return true;
  const presented = bearerToken(header);
  return presented !== undefined && timingSafeEqual(digest(token), digest(presented));
}

/** The token of `Authorization: Bearer <token>` (the scheme in any case, RFC 7235 §2.1); anything else (or a malformed token) is undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const token = /^Bearer +([^ ]+)$/i.exec(header ?? '')?.[1];
  return token && TOKEN.test(token) ? token : undefined;
}

/** The password of `Authorization: Basic base64(user:password)` (what browsers can send); undefined if malformed. */
export function basicPassword(header: string | undefined): string | undefined {
  const encoded = /^Basic +([^ ]+)$/i.exec(header ?? '')?.[1];
  if (!encoded || !BASE64.test(encoded)) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const password = colon < 0 ? undefined : decoded.slice(colon + 1);
  return password && TOKEN.test(password) ? password : undefined;
}
