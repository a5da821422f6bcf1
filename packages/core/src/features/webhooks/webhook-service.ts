import { randomBytes, randomUUID } from 'node:crypto';
import type { Principal } from '@rein/contract';
import { type CreateWebhookBody, createdWebhookSchema, type Webhook, type WebhookView } from '@rein/contract';
import { assertPublicUrl } from '../../adapters/net/address-guard.js';
import type { AuditLog } from '../../adapters/redis/audit-log.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../../shared/errors.js';
import type { WebhookStore } from './webhook-store.js';

/** Webhooks one tenant may register. */
export const MAX_WEBHOOKS_PER_TENANT = 20;

export interface WebhookServiceDeps {
  store: WebhookStore;
  /** REIN_WEBHOOK_ALLOW_PRIVATE: skip the SSRF check (tests, local setups). */
  allowPrivate: boolean;
  /** The tenants' decision logs: webhook changes are governance events. */
  audit?: Pick<AuditLog, 'append'>;
  now?: () => number;
}

/**
 * A URL as shown back: query values and any credentials replaced, since they may be
 * secrets (tokens in a query string; userinfo of webhooks registered before it was refused).
 */
function redactedUrl(raw: string): string {
  const url = new URL(raw);
  if (url.username || url.password) [url.username, url.password] = ['redacted', ''];
  url.search = new URLSearchParams([...url.searchParams.keys()].map((k): [string, string] => [k, 'redacted'])).toString();
  return url.toString();
}

const view = ({ schemaVersion: _v, tenantId: _t, secret: _s, url, ...hook }: Webhook): WebhookView => ({
  ...hook,
  url: redactedUrl(url),
});

/** Register, list and remove a tenant's webhooks, and read their delivery logs: tenant admins only. */
export function createWebhookService(deps: WebhookServiceDeps) {
  const now = deps.now ?? Date.now;

  function requireAdmin(principal: Principal) {
    if (!principal.roles.includes('admin')) throw new ForbiddenError('webhooks are managed by tenant admins');
  }

  async function own(principal: Principal, id: string): Promise<Webhook> {
    requireAdmin(principal);
    const hook = await deps.store.get(principal.tenantId, id);
    if (!hook) throw new NotFoundError(`webhook ${id}`);
    return hook;
  }

  return {
    /** The one response that carries the signing secret: the caller keeps it. */
    async create(principal: Principal, body: CreateWebhookBody) {
      requireAdmin(principal);
      if (!deps.allowPrivate) await assertPublicUrl(body.url, 'webhook_url');
      const hook: Webhook = {
        schemaVersion: 1,
        id: `wh_${randomUUID().replaceAll('-', '')}`,
        tenantId: principal.tenantId,
        url: body.url,
        events: [...new Set(body.events)],
        secret: `whsec_${randomBytes(32).toString('base64')}`,
        createdBy: principal.userId,
        createdAt: new Date(now()).toISOString(),
      };
      if (!(await deps.store.add(hook, MAX_WEBHOOKS_PER_TENANT)))
        throw new ConflictError('too_many_webhooks', `a tenant may register at most ${MAX_WEBHOOKS_PER_TENANT} webhooks`);
      await deps.audit?.append([
        {
          tenantId: hook.tenantId,
          actor: principal.userId,
          action: 'webhook.created',
          subject: { webhookId: hook.id },
          data: { url: hook.url, events: hook.events },
        },
      ]);
      return createdWebhookSchema.parse({ ...view(hook), secret: hook.secret });
    },

    async list(principal: Principal) {
      requireAdmin(principal);
      return (await deps.store.all(principal.tenantId)).map(view);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await own(principal, id);
      await deps.store.remove(principal.tenantId, id);
      await deps.audit?.append([
        { tenantId: principal.tenantId, actor: principal.userId, action: 'webhook.deleted', subject: { webhookId: id } },
      ]);
    },

    async deliveries(principal: Principal, id: string) {
      const hook = await own(principal, id);
      return { webhookId: hook.id, attempts: await deps.store.attempts(principal.tenantId, id) };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
