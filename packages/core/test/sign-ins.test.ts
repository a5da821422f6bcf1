import type { Principal } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { signInStanding } from '../src/features/identity/sign-ins.js';

const owner: Principal = { tenantId: 'acme', userId: 'dana', roles: ['user', 'approver'] };
const DAY = 86_400_000;
const now = Date.parse('2026-12-05T00:00:00Z');

describe('signInStanding: an owner with no key stands by their company sign-ins', () => {
  it('stands while the latest sign-in is within the window and carries every role the work runs with', () => {
    expect(signInStanding(owner, { roles: ['approver', 'user', 'admin'], at: now - 29 * DAY }, 30 * DAY, now)).toBeNull();
  });
  it('does not stand past the window', () => {
    expect(signInStanding(owner, { roles: owner.roles, at: now - 31 * DAY }, 30 * DAY, now)).toMatchObject({
      code: 'owner_signed_out',
      reason: expect.stringContaining('2026-11-04'),
    });
  });
  it('does not stand when the latest sign-in lost a role', () => {
    expect(signInStanding(owner, { roles: ['user'], at: now }, 30 * DAY, now)).toMatchObject({ code: 'owner_roles_changed' });
  });
  it('does not stand for someone who never signed in', () => {
    expect(signInStanding(owner, null, 30 * DAY, now)).toMatchObject({ code: 'owner_key_missing' });
  });
});
