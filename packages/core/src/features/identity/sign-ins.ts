import type { Principal } from '@rein/contract';
import type { SignIn, SignInStore } from '../../adapters/redis/sign-in-store.js';
import type { Logger } from '../../shared/logger.js';

/** Why an owner no longer stands, as a schedule's pause records it. */
export interface Standing {
  code: string;
  reason: string;
}

/**
 * Whether a person who signs in through the company provider still stands as the owner of
 * work that runs without them (a schedule): their latest verified token is no older than
 * `standingMs` and carried every role the work runs with. The provider is where people are
 * revoked, and Rein hears of it only when they sign in, so a person who stops signing in
 * stops standing once the window has passed.
 */
export function signInStanding(owner: Principal, last: SignIn | null, standingMs: number, now: number): Standing | null {
  if (!last)
    return {
      code: 'owner_key_missing',
      reason: `no key of user ${owner.userId} in tenant ${owner.tenantId} exists, and they never signed in through the company provider`,
    };
  if (now - last.at > standingMs)
    return {
      code: 'owner_signed_out',
      reason: `user ${owner.userId} has not signed in through the company provider since ${new Date(last.at).toISOString()}`,
    };
  if (!owner.roles.every((r) => last.roles.includes(r)))
    return {
      code: 'owner_roles_changed',
      reason: `user ${owner.userId}'s latest sign-in no longer carries every role the schedule runs with (${owner.roles.join(', ')})`,
    };
  return null;
}

/** How often one process writes the same person's unchanged sign-in (a token is verified on every request). */
const REFRESH_MS = 5 * 60_000;
/** People one process remembers having written recently; past it, it forgets them all (and writes again). */
const REMEMBERED = 10_000;

export interface SignInsDeps {
  store: SignInStore;
  /** REIN_OIDC_OWNER_STANDING_MS. */
  standingMs: number;
  logger: Logger;
  now?: () => number;
}

/** Company sign-ins: recorded as tokens are verified, read when a schedule fires as its owner. */
export function createSignIns({ store, standingMs, logger, now = Date.now }: SignInsDeps) {
  const written = new Map<string, { roles: string; at: number }>();
  return {
    /** A token of `p` was verified: record it (at most once per REFRESH_MS unless its roles changed); never throws. */
    seen(p: Principal): void {
      const who = JSON.stringify([p.tenantId, p.userId]);
      const roles = [...p.roles].sort().join(',');
      const at = now();
      const last = written.get(who);
      if (last && last.roles === roles && at - last.at < REFRESH_MS) return;
      if (written.size >= REMEMBERED) written.clear();
      written.set(who, { roles, at });
      store.record(p, at).catch((err: unknown) => {
        written.delete(who);
        logger.warn({ err, tenantId: p.tenantId, userId: p.userId }, 'could not record a company sign-in');
      });
    },
    /** Null while `owner` stands by their company sign-ins; else why not. */
    async standing(owner: Principal): Promise<Standing | null> {
      return signInStanding(owner, await store.get(owner.tenantId, owner.userId), standingMs, now());
    },
  };
}
export type SignIns = ReturnType<typeof createSignIns>;
