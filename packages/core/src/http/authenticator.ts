import type { ApiKey, Principal } from '@rein/contract';
import type { OidcVerifier } from '../features/identity/oidc-verifier.js';
import { findApiKey } from '../policy/identity/credentials.js';
import { UnauthorizedError } from '../shared/errors.js';

/** A JWS in compact form: three base64url parts (the signature may not be empty: `alg: none` is refused before any check). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export interface AuthenticatorOptions {
  apiKeys: readonly ApiKey[];
  /** Set: provider-signed JWTs are accepted beside the keys. */
  oidc?: Pick<OidcVerifier, 'verify'>;
  /** Told of each principal a provider-signed JWT proved (schedules' owners stand by their sign-ins). */
  onSignedIn?: (p: Principal) => void;
}

/**
 * Who a bearer token is: a static key (services, local development), else — when company
 * sign-in is on — a JWT the provider signed. Keys are compared first and in constant time;
 * a token that is neither is a 401 with no hint of which check failed.
 */
export function createAuthenticator(opts: AuthenticatorOptions) {
  return async (token: string | undefined): Promise<Principal> => {
    if (token === undefined) throw new UnauthorizedError(opts.oidc ? 'missing or unknown API key or token' : undefined);
    const key = findApiKey([...opts.apiKeys], token);
    if (key) return { tenantId: key.tenantId, userId: key.userId, roles: key.roles };
    if (opts.oidc && COMPACT_JWS.test(token)) {
      const principal = await opts.oidc.verify(token);
      opts.onSignedIn?.(principal);
      return principal;
    }
    throw new UnauthorizedError(opts.oidc ? 'missing or unknown API key or token' : undefined);
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
