import { tenantKeys } from '../keys.js';
import type { RedisClient } from '../redis.js';
import { type ApprovalFeedEvent, approvalFeedEventSchema } from '../schemas/event.js';

export type UncertainEffect = Extract<ApprovalFeedEvent, { type: 'effect.uncertain' }>;

/**
 * A tenant's live feed of what approvers must see (a capped Redis stream): approval
 * changes and writes whose outcome is unknown, so a console or a chat bot can notify
 * without polling. It carries ids and statuses only; readers fetch details with their
 * own permissions.
 */
export class ApprovalFeed {
  constructor(
    private readonly redis: RedisClient,
    /** Told of every published event (webhooks), after it is in the feed. */
    private readonly onPublish?: (tenantId: string, event: ApprovalFeedEvent) => Promise<void>,
  ) {}

  async publish(tenantId: string, event: ApprovalFeedEvent): Promise<void> {
    await this.redis.xadd(tenantKeys(tenantId).approvalFeed, 'MAXLEN', '~', '10000', '*', 'e', JSON.stringify(event));
    await this.onPublish?.(tenantId, event);
  }

  /**
   * The tenant's writes with an unknown outcome, newest first (from the last 10 000 feed
   * entries); `keep` narrows them to what the caller may see before `limit` applies.
   */
  async uncertainEffects(
    tenantId: string,
    limit = 100,
    keep: (effects: UncertainEffect[]) => Promise<UncertainEffect[]> = async (effects) => effects,
  ): Promise<UncertainEffect[]> {
    const entries = await this.redis.xrevrange(tenantKeys(tenantId).approvalFeed, '+', '-', 'COUNT', 10_000);
    const seen = new Set<string>();
    const candidates: UncertainEffect[] = [];
    for (const [, fields] of entries) {
      const event = approvalFeedEventSchema.parse(JSON.parse(fields[1] ?? '{}'));
      if (event.type !== 'effect.uncertain' || seen.has(`${event.runId}:${event.toolCallId}`)) continue;
      seen.add(`${event.runId}:${event.toolCallId}`);
      candidates.push(event);
    }
    const out: UncertainEffect[] = [];
    for (let at = 0; at < candidates.length && out.length < limit; at += limit) {
      out.push(...(await keep(candidates.slice(at, at + limit))));
    }
    return out.slice(0, limit);
  }

  /** Up to 100 entries after `afterId`, at once (live readers wait on a StreamHub). */
  async read(tenantId: string, afterId: string) {
    const key = tenantKeys(tenantId).approvalFeed;
    const reply = await this.redis.xread('COUNT', 100, 'STREAMS', key, afterId);
    return (reply?.[0]?.[1] ?? []).map(([id, fields]) => ({ id, event: approvalFeedEventSchema.parse(JSON.parse(fields[1] ?? '{}')) }));
  }
}
