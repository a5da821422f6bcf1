import { type Principal, principalSchema, type Role, roleSchema } from '@rein/contract';

/** Where a verified token's claims name the tenant, the user and the roles, and how provider roles map to Rein's. */
export interface ClaimMapping {
  tenantClaim: string;
  userClaim: string;
  rolesClaim: string;
  roleMap: Readonly<Record<string, Role>>;
}

/** Why a verified token still names no principal; each becomes a 401 or 403 naming the claim. */
export type ClaimRefusal = { kind: 'malformed'; claim: string; why: string } | { kind: 'no_role'; claim: string };

/**
 * A claim by its full name (`https://example.com/tenant`, as Auth0 and Okta namespace
 * them), else by a dotted path through nested objects (`realm_access.roles`, Keycloak's).
 * Own properties only: `__proto__` or `constructor` in a path names nothing.
 */
export function claimAt(claims: Readonly<Record<string, unknown>>, path: string): unknown {
  if (Object.hasOwn(claims, path)) return claims[path];
  let at: unknown = claims;
  for (const part of path.split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/**
 * The principal a verified token names, or why it names none. Strict on types: the tenant
 * and the user are strings (an array or object is refused, never coerced or joined); the
 * roles are an array of strings or one space-separated string, anything else is refused
 * whole rather than read in part. Provider roles map through `roleMap`; Rein's own role
 * names count as themselves; other names are ignored.
 */
export function principalFromClaims(
  claims: Readonly<Record<string, unknown>>,
  mapping: ClaimMapping,
): { ok: true; principal: Principal } | { ok: false; refusal: ClaimRefusal } {
  const tenantId = claimAt(claims, mapping.tenantClaim);
  if (typeof tenantId !== 'string' || !principalSchema.shape.tenantId.safeParse(tenantId).success)
    return { ok: false, refusal: { kind: 'malformed', claim: mapping.tenantClaim, why: 'a string of 1-128 characters' } };
  const userId = claimAt(claims, mapping.userClaim);
  if (typeof userId !== 'string' || !principalSchema.shape.userId.safeParse(userId).success)
    return { ok: false, refusal: { kind: 'malformed', claim: mapping.userClaim, why: 'a string of 1-128 characters' } };
  const raw = claimAt(claims, mapping.rolesClaim);
  const names = typeof raw === 'string' ? raw.split(' ').filter(Boolean) : raw === undefined ? [] : raw;
  if (!Array.isArray(names) || names.length > 100 || !names.every((n) => typeof n === 'string'))
    return { ok: false, refusal: { kind: 'malformed', claim: mapping.rolesClaim, why: 'an array of strings' } };
  const roles = new Set<Role>();
  for (const name of names as string[]) {
    const mapped = Object.hasOwn(mapping.roleMap, name) ? mapping.roleMap[name] : roleSchema.safeParse(name).data;
    if (mapped) roles.add(mapped);
  }
  if (roles.size === 0) return { ok: false, refusal: { kind: 'no_role', claim: mapping.rolesClaim } };
  return { ok: true, principal: { tenantId, userId, roles: [...roles] } };
}
