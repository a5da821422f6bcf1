import { randomBytes } from 'node:crypto';
import type { ApiKey, ApprovalView, Principal } from '@rein/contract';
import type { LinkUses } from '../../adapters/redis/link-uses.js';
import { holdsRole, mayDecide } from '../../policy/approvals/decision-rights.js';
import { type LinkPayload, readLink, signLink } from '../../policy/approvals/link-token.js';
import { ConflictError, ForbiddenError, GoneError, InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import type { ApprovalService } from './approval-service.js';

export interface ApprovalLinksDeps {
  approvals: Pick<ApprovalService, 'get' | 'decide'>;
  uses: Pick<LinkUses, 'claim' | 'spent'>;
  /** The fleet's API keys: who a user is (tenant, roles) when their link is used. */
  keys: readonly ApiKey[];
  secret: string;
  /** The approver's public base URL (REIN_CONSOLE_URL): the only origin a link names. Unset: no links. */
  consoleUrl: string | undefined;
  now?: () => number;
}

/** What a link shows before it is used: the approval, as whom and which way it decides. */
export interface LinkPreview {
  approval: ApprovalView;
  userId: string;
  verdict: LinkPayload['v'];
}

/**
 * One-click approval links, safe in mail and chat: minted for one user and one approval
 * (bound to its arguments' hash), single use, expiring with the approval. Using one is a
 * decision with the API's own rights, as that user (looked up again when it is used).
 */
export function createApprovalLinks(deps: ApprovalLinksDeps) {
  const now = deps.now ?? Date.now;

  /** The user as their keys say, now (a person with several keys holds all their roles); without a key, nobody. */
  function principalOf(tenantId: string, userId: string): Principal | undefined {
    const roles = [...new Set(deps.keys.filter((k) => k.tenantId === tenantId && k.userId === userId).flatMap((k) => k.roles))];
    return roles.length ? { tenantId, userId, roles } : undefined;
  }

  /** A link's payload and approval, checked: signed by us, not expired, not spent, same arguments, still pending. */
  async function open(token: string): Promise<{ link: LinkPayload; as: Principal; approval: ApprovalView }> {
    const link = readLink(deps.secret, token);
    if (!link) throw new ForbiddenError('this link is not one this service signed');
    if (now() >= link.e) throw new GoneError('link_expired', 'this link has expired');
    const as = principalOf(link.t, link.u);
    if (!as) throw new ForbiddenError(`${link.u} may no longer decide approvals`);
    const approval = await deps.approvals.get(as, link.a).catch((err) => {
      throw err instanceof NotFoundError ? new ForbiddenError('this link names no approval its user may see') : err;
    });
    if (await deps.uses.spent(link.n)) throw new ConflictError('link_used', 'this link was used already');
    if (approval.status === 'expired') throw new GoneError('approval_expired', `approval ${approval.id} expired`);
    if (approval.status !== 'pending') throw new ConflictError('approval_decided', `approval ${approval.id} is already ${approval.status}`);
    if (approval.argsHash !== link.h) throw new ConflictError('approval_decided', 'the arguments were edited after this link was made');
    return { link, as, approval };
  }

  return {
    /**
     * `POST /v1/approvals/:id/links`: for the caller, or (a tenant admin) for a named user
     * of the tenant; only for someone who may decide it as proposed.
     */
    async mint(principal: Principal, id: string, body: { userId?: string }) {
      // Never the request's Host: whoever can send a request could make links point at their own site.
      const baseUrl = deps.consoleUrl;
      if (!baseUrl) throw new ConflictError('console_url_unset', "set REIN_CONSOLE_URL (the approver console's public URL) to mint links");
      const userId = body.userId ?? principal.userId;
      if (userId !== principal.userId && !holdsRole(principal.roles, 'admin'))
        throw new ForbiddenError('only a tenant admin mints links for someone else');
      const approval = await deps.approvals.get(principal, id);
      const as = principalOf(principal.tenantId, userId);
      if (!as) throw new NotFoundError(`user ${userId}`);
      if (approval.status !== 'pending') throw new ConflictError('approval_decided', `approval ${id} is already ${approval.status}`);
      if (!mayDecide(as, approval)) throw new ForbiddenError(`${userId} may not decide approval ${id}`);
      // A question is approved only with its answer, which a link cannot carry: its approve link would be spent on a refusal.
      if (approval.kind === 'input')
        throw new InvalidRequestError(
          `approval ${id} asks a question: answer it in the console, with the answer as its arguments`,
          'invalid_arguments',
        );
      const e = Date.parse(approval.expiresAt);
      const base = { a: approval.id, h: approval.argsHash, t: as.tenantId, u: userId, e, n: randomBytes(18).toString('base64url') };
      // In the query: a signed token is longer than any path segment the router takes.
      const url = (v: LinkPayload['v']) => `${baseUrl}/links?token=${signLink(deps.secret, { ...base, v })}`;
      return { approveUrl: url('approve'), rejectUrl: url('reject'), expiresAt: new Date(e).toISOString() };
    },

    /** What `GET /links/:token` shows; it never decides (mail scanners follow links). */
    async preview(token: string): Promise<LinkPreview> {
      const { link, approval } = await open(token);
      return { approval, userId: link.u, verdict: link.v };
    },

    /** `POST /links/:token`: spends the link (once, fleet-wide), then decides as its user. */
    async use(token: string): Promise<ApprovalView> {
      const { link, as } = await open(token);
      if (!(await deps.uses.claim(link.n, link.e, now()))) throw new ConflictError('link_used', 'this link was used already');
      // Bound to the arguments it was minted for, checked again in the decision's own compare-and-set.
      const verdict =
        link.v === 'approve'
          ? { kind: 'approve' as const, comment: 'approved by link' }
          : { kind: 'reject' as const, reason: 'rejected by link' };
      return deps.approvals.decide(as, link.a, { ...verdict, argsHash: link.h });
    },
  };
}

export type ApprovalLinks = ReturnType<typeof createApprovalLinks>;
