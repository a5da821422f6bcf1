import { describe, expect, it } from 'vitest';
import { claimAt, principalFromClaims } from '../src/policy/identity/token-claims.js';

const mapping = { tenantClaim: 'tenant', userClaim: 'sub', rolesClaim: 'roles', roleMap: { 'rein-approvers': 'approver' } } as const;

describe('claims to a principal', () => {
  it('reads a namespaced claim by its full name, else a dotted path, own properties only', () => {
    const claims = { 'https://acme.test/tenant': 'acme', realm_access: { roles: ['user'] } };
    expect(claimAt(claims, 'https://acme.test/tenant')).toBe('acme');
    expect(claimAt(claims, 'realm_access.roles')).toEqual(['user']);
    expect(claimAt(claims, 'realm_access.constructor')).toBeUndefined();
    expect(claimAt(claims, '__proto__')).toBeUndefined();
  });

  it('maps provider roles, keeps Rein role names, ignores the rest', () => {
    expect(principalFromClaims({ sub: 'li', tenant: 'acme', roles: ['rein-approvers', 'user', 'billing'] }, mapping)).toEqual({
      ok: true,
      principal: { tenantId: 'acme', userId: 'li', roles: ['approver', 'user'] },
    });
    expect(principalFromClaims({ sub: 'li', tenant: 'acme', roles: 'user approver' }, mapping)).toMatchObject({
      ok: true,
      principal: { roles: ['user', 'approver'] },
    });
  });

  it('refuses claims of the wrong type whole, and says when no Rein role is granted', () => {
    const refusal = (claims: Record<string, unknown>) => {
      const r = principalFromClaims({ sub: 'li', tenant: 'acme', roles: ['user'], ...claims }, mapping);
      return r.ok ? 'ok' : r.refusal.kind;
    };
    expect(refusal({ tenant: ['acme', 'globex'] })).toBe('malformed');
    expect(refusal({ tenant: '' })).toBe('malformed');
    expect(refusal({ sub: { id: 'li' } })).toBe('malformed');
    expect(refusal({ roles: { admin: true } })).toBe('malformed');
    expect(refusal({ roles: ['admin', ['admin']] })).toBe('malformed');
    expect(refusal({ roles: ['toString', 'hasOwnProperty'] })).toBe('no_role');
    expect(refusal({ roles: undefined })).toBe('no_role');
  });
});
