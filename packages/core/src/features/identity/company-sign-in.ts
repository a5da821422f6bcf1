import type { ReinOptions } from '../../shared/options.js';
import { createOidcVerifier, type OidcVerifier } from './oidc-verifier.js';

/** The verifier of provider-signed JWTs when company sign-in is configured (REIN_OIDC_ISSUER); none otherwise. */
export function oidcVerifierFrom(oidc: ReinOptions['oidc']): OidcVerifier | undefined {
  if (!oidc.issuer || !oidc.audience?.length) return undefined;
  return createOidcVerifier({
    issuer: oidc.issuer,
    audience: oidc.audience,
    tenantClaim: oidc.tenantClaim,
    userClaim: oidc.userClaim,
    rolesClaim: oidc.rolesClaim,
    roleMap: oidc.roleMap,
    clockToleranceSec: oidc.clockToleranceSec,
    jwksCooldownMs: oidc.jwksCooldownMs,
  });
}
