import type { Redis } from 'ioredis';
import { z } from 'zod';
import { tenantKeys } from '../keys.js';

export const approvalFeedEventSchema = z.object({
  type: z.enum(['approval.requested', 'approval.decided']),
  approvalId: z.string(),
  runId: z.string(),
  status: z.string(),
  at: z.string(),
});
export type ApprovalFeedEvent = z.infer<typeof approvalFeedEventSchema>;

/**
 * A tenant's live feed of approval changes (a capped Redis stream), so a console or a
 * chat bot can notify approvers without polling. It carries ids and statuses only;
 * readers fetch the approval itself with their own permissions.
 */
export class ApprovalFeed {
  constructor(private readonly redis: Redis) {}

  async publish(tenantId: string, event: ApprovalFeedEvent): Promise<void> {
    await this.redis.xadd(tenantKeys(tenantId).approvalFeed, 'MAXLEN', '~', '10000', '*', 'e', JSON.stringify(event));
  }

  async read(tenantId: string, afterId: string, blockMs: number, redis: Redis = this.redis) {
    const key = tenantKeys(tenantId).approvalFeed;
    const reply = await redis.xread('COUNT', 100, 'BLOCK', blockMs, 'STREAMS', key, afterId);
    return (reply?.[0]?.[1] ?? []).map(([id, fields]) => ({ id, event: approvalFeedEventSchema.parse(JSON.parse(fields[1] ?? '{}')) }));
  }
}
