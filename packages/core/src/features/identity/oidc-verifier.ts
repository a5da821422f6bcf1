import type { Principal } from '@rein/contract';
import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey, errors as joseErrors, jwtVerify } from 'jose';
import { z } from 'zod';
import { type ClaimMapping, principalFromClaims } from '../../policy/identity/token-claims.js';
import { ForbiddenError, IdentityProviderUnavailableError, UnauthorizedError } from '../../shared/errors.js';

/** What the verifier needs of the provider and of Rein's claim mapping (the `oidc` options). */
export interface OidcVerifierOptions extends ClaimMapping {
  issuer: string;
  audience: readonly string[];
  clockToleranceSec: number;
  jwksCooldownMs: number;
  fetch?: typeof fetch;
}

/** The parts of the provider's discovery document Rein uses (OpenID Connect Discovery 1.0 §3). */
export const discoverySchema = z.object({
  issuer: z.string().url(),
  jwks_uri: z.string().url(),
  authorization_endpoint: z.string().url().optional(),
  token_endpoint: z.string().url().optional(),
  end_session_endpoint: z.string().url().optional(),
});
export type Discovery = z.infer<typeof discoverySchema>;

/**
 * Signatures Rein accepts: asymmetric ones only. `none` and the HMAC family are never on
 * the list, so a token signed with the provider's public key as an HMAC secret (the
 * classic algorithm confusion) or not signed at all is refused before any key is chosen.
 */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const DISCOVERY_TIMEOUT_MS = 5_000;

/** https, or http on a loopback host (a provider started beside the service in development and tests). */
const safeUrl = (u: string) => {
  const url = new URL(u);
  return url.protocol === 'https:' || (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname));
};

/**
 * Verifies provider-signed JWTs: discovery read once (again after a failure), keys from the
 * provider's JWKS (fetched again when a token names a key id not yet seen, at most once per
 * cooldown: a rotation is picked up, a flood of made-up key ids is not a flood of fetches),
 * then issuer, audience, expiry and clock skew checked by `jose`, and the claims mapped to a
 * principal. Every refusal of the token itself is a 401; a valid token granting no Rein role, a 403.
 */
export function createOidcVerifier(opts: OidcVerifierOptions) {
  const fetcher = opts.fetch ?? fetch;
  let provider: Promise<{ discovery: Discovery; keys: JWTVerifyGetKey }> | undefined;

  async function discover() {
    const url = `${opts.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    let body: unknown;
    try {
      const res = await fetcher(url, { signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS), redirect: 'error' });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      body = await res.json();
    } catch (err) {
      throw new IdentityProviderUnavailableError(
        `the OpenID Provider's discovery document could not be read: ${(err as Error).message}`,
        err,
      );
    }
    const parsed = discoverySchema.safeParse(body);
    if (!parsed.success) throw new IdentityProviderUnavailableError('the OpenID Provider answered no usable discovery document');
    const discovery = parsed.data;
    // Discovery §4.3: the document must name the issuer it was read from, or its keys vouch for someone else.
    if (discovery.issuer !== opts.issuer)
      throw new IdentityProviderUnavailableError(`the discovery document names issuer ${discovery.issuer}`);
    if (!safeUrl(discovery.jwks_uri)) throw new IdentityProviderUnavailableError('the provider names a jwks_uri that is not https');
    const keys = createRemoteJWKSet(new URL(discovery.jwks_uri), {
      cooldownDuration: opts.jwksCooldownMs,
      timeoutDuration: DISCOVERY_TIMEOUT_MS,
      [customFetch]: fetcher,
    });
    return { discovery, keys };
  }

  function providerOnce() {
    provider ??= discover().catch((err) => {
      provider = undefined; // a provider down at start is tried again on the next token
      throw err;
    });
    return provider;
  }

  return {
    /** The discovery document (the console's sign-in reads its endpoints). */
    async discovery(): Promise<Discovery> {
      return (await providerOnce()).discovery;
    },

    /** The principal a bearer JWT names, or a 401 (token refused) / 403 (no Rein role) / 503 (provider unreachable). */
    async verify(token: string): Promise<Principal> {
      const { keys } = await providerOnce();
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer: opts.issuer,
          audience: [...opts.audience],
          algorithms: ALGORITHMS,
          clockTolerance: opts.clockToleranceSec,
          requiredClaims: ['exp', 'iat'],
        }));
      } catch (err) {
        // Not the token's fault: the keys could not be fetched (network, timeout) or read.
        if (!(err instanceof joseErrors.JOSEError) || err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid)
          throw new IdentityProviderUnavailableError("the OpenID Provider's keys could not be read", err);
        throw new UnauthorizedError(`the token was refused: ${tokenRefusal(err)}`);
      }
      const mapped = principalFromClaims(payload, opts);
      if (mapped.ok) return mapped.principal;
      const { refusal } = mapped;
      if (refusal.kind === 'no_role') throw new ForbiddenError(`the token grants no Rein role (claim ${refusal.claim})`);
      throw new UnauthorizedError(`the token was refused: claim ${refusal.claim} must be ${refusal.why}`);
    },
  };
}

export type OidcVerifier = ReturnType<typeof createOidcVerifier>;

/** Says which check failed, never echoing the token or its claims' values. */
function tokenRefusal(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `claim ${err.claim} failed its check (${err.reason})`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'its signature algorithm is not accepted';
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'no key of the provider matches it';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  if (err instanceof joseErrors.JOSEError) return err.code;
  return 'not a JWT';
}
