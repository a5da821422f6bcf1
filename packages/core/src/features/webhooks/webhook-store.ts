import { type DeliveryAttempt, deliveryAttemptSchema, type Webhook, webhookSchema } from '@rein/contract';
import { AddWebhookResult, scriptGateway } from '../../adapters/redis/lua-scripts.js';
import type { RedisClient } from '../../adapters/redis/redis.js';
import { tenantKeys } from '../../shared/keys.js';

/** Attempts kept per webhook in its delivery log. */
export const DELIVERY_LOG_SIZE = 100;

/** A tenant's webhooks (one hash per tenant) and each one's recent delivery attempts. */
export class WebhookStore {
  constructor(private readonly redis: RedisClient) {}

  /** Stores the webhook unless its tenant already has `max`: checked and written in one step. */
  async add(hook: Webhook, max: number): Promise<boolean> {
    const json = JSON.stringify(webhookSchema.parse(hook));
    const result = await scriptGateway(this.redis).addWebhook({ webhooks: tenantKeys(hook.tenantId).webhooks }, { id: hook.id, json, max });
    return result === AddWebhookResult.Added;
  }

  async put(hook: Webhook): Promise<void> {
    await this.redis.hset(tenantKeys(hook.tenantId).webhooks, hook.id, JSON.stringify(webhookSchema.parse(hook)));
  }

  async get(tenantId: string, id: string): Promise<Webhook | null> {
    const raw = await this.redis.hget(tenantKeys(tenantId).webhooks, id);
    return raw ? webhookSchema.parse(JSON.parse(raw)) : null;
  }

  /** Every webhook of the tenant: one read, also what each emitted event costs. */
  async all(tenantId: string): Promise<Webhook[]> {
    const raw = await this.redis.hvals(tenantKeys(tenantId).webhooks);
    return raw.map((r) => webhookSchema.parse(JSON.parse(r))).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Removes the webhook and its log; returns whether it existed. */
  async remove(tenantId: string, id: string): Promise<boolean> {
    const t = tenantKeys(tenantId);
    const [[, removed] = [null, 0]] = (await this.redis.multi().hdel(t.webhooks, id).del(t.webhookDeliveries(id)).exec()) ?? [];
    return removed === 1;
  }

  async logAttempt(tenantId: string, webhookId: string, attempt: DeliveryAttempt): Promise<void> {
    const key = tenantKeys(tenantId).webhookDeliveries(webhookId);
    await this.redis
      .multi()
      .lpush(key, JSON.stringify(deliveryAttemptSchema.parse(attempt)))
      .ltrim(key, 0, DELIVERY_LOG_SIZE - 1)
      .exec();
  }

  /** The latest attempts, newest first. */
  async attempts(tenantId: string, webhookId: string): Promise<DeliveryAttempt[]> {
    const raw = await this.redis.lrange(tenantKeys(tenantId).webhookDeliveries(webhookId), 0, DELIVERY_LOG_SIZE - 1);
    return raw.map((r) => deliveryAttemptSchema.parse(JSON.parse(r)));
  }
}
