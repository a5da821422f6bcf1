import type { Approval } from '@rein/contract';
import { type ApprovalFeedEvent, approvalFeedEventSchema } from '@rein/contract';
import { z } from 'zod';
import { APPROVAL_OUTBOX_KEY, tenantKeys } from '../../shared/keys.js';
import type { RedisClient } from './redis.js';

export type UncertainEffect = Extract<ApprovalFeedEvent, { type: 'effect.uncertain' }>;
export type ApprovalEvent = Extract<
  ApprovalFeedEvent,
  { type: 'approval.requested' | 'approval.decided' | 'approval.withdrawn' | 'approval.escalated' }
>;

/** The feed event of an approval's request, or of its decision (`decided`); a withdrawal on a version change has its own type. */
export const approvalEvent = (a: Approval, decided: boolean): ApprovalEvent =>
  decided
    ? {
        type: a.reason === 'version_changed' ? 'approval.withdrawn' : 'approval.decided',
        approvalId: a.id,
        runId: a.runId,
        status: a.status,
        at: a.decidedAt ?? '',
      }
    : { type: 'approval.requested', approvalId: a.id, runId: a.runId, status: a.status, at: a.createdAt };

/** The feed event of an approval's latest escalation (`at` tells one escalation of a chain from the next). */
export const escalationEvent = (a: Approval): ApprovalEvent => ({
  type: 'approval.escalated',
  approvalId: a.id,
  runId: a.runId,
  status: a.status,
  at: a.escalatedAt ?? '',
});

const isApprovalEvent = (e: ApprovalFeedEvent): e is ApprovalEvent => e.type !== 'effect.uncertain';

/** An outbox entry is the event itself, so staging and publishing name the same member. */
const outboxMember = (tenantId: string, e: ApprovalEvent) => JSON.stringify([tenantId, e.type, e.approvalId, e.runId, e.status, e.at]);
const outboxEntrySchema = z.tuple([
  z.string(),
  z.enum(['approval.requested', 'approval.decided', 'approval.withdrawn', 'approval.escalated']),
  z.string(),
  z.string(),
  z.string(),
  z.string(),
]);

/** Whether the stored approvals show the event happened: its commit landed (a lost one staged it in vain). */
const happened = (e: ApprovalEvent, approvals: Approval[]) => {
  const a = approvals.find((x) => x.id === e.approvalId);
  if (e.type === 'approval.escalated') return a?.escalations?.some((x) => x.at === e.at) ?? false;
  return a !== undefined && (e.type === 'approval.requested' || a.status === e.status);
};

/**
 * A tenant's live feed of what approvers must see (a capped Redis stream): approval
 * changes and writes whose outcome is unknown, so a console or a chat bot can notify
 * without polling. It carries ids and statuses only; readers fetch details with their
 * own permissions.
 */
export class ApprovalFeed {
  constructor(
    private readonly redis: RedisClient,
    /** Told of every published event (webhooks), after it is in the feed; `false`: it could not take it. */
    private readonly onPublish?: (tenantId: string, event: ApprovalFeedEvent) => Promise<boolean | undefined>,
  ) {}

  async publish(tenantId: string, event: ApprovalFeedEvent): Promise<void> {
    await this.redis.xadd(tenantKeys(tenantId).approvalFeed, 'MAXLEN', '~', '10000', '*', 'e', JSON.stringify(event));
    // A delivery that could not be enqueued leaves the event staged, for the reaper to publish again.
    const handed = await this.onPublish?.(tenantId, event);
    if (isApprovalEvent(event) && handed !== false) await this.redis.zrem(APPROVAL_OUTBOX_KEY, outboxMember(tenantId, event));
  }

  /**
   * Approval events are at least once, like `run.finished`: staged here before the commit
   * that makes them true, removed once published, and published by the reaper
   * (`redeliverDue`) when a crash came in between. Webhook deliveries keep their id, so a
   * second publish delivers once more at most to the feed and never to a webhook twice.
   */
  async stage(tenantId: string, events: ApprovalEvent[]): Promise<void> {
    if (!events.length) return;
    const at = Date.now();
    await this.redis.zadd(APPROVAL_OUTBOX_KEY, ...events.flatMap((e) => [at, outboxMember(tenantId, e)]));
  }

  /**
   * Publishes what was staged before `before` (ms) and never published, if its commit
   * landed (told by `approvalsOf`), and drops what a lost commit staged. Returns how many
   * it published.
   */
  async redeliverDue(before: number, approvalsOf: (runId: string) => Promise<Approval[]>, limit = 500): Promise<number> {
    const due = await this.redis.zrangebyscore(APPROVAL_OUTBOX_KEY, 0, before, 'LIMIT', 0, limit);
    let published = 0;
    for (const member of due) {
      const parsed = outboxEntrySchema.safeParse(JSON.parse(member));
      if (!parsed.success) {
        await this.redis.zrem(APPROVAL_OUTBOX_KEY, member);
        continue;
      }
      const [tenantId, type, approvalId, runId, status, at] = parsed.data;
      const event: ApprovalEvent = { type, approvalId, runId, status, at };
      if (happened(event, await approvalsOf(runId))) {
        await this.publish(tenantId, event);
        published++;
      } else await this.redis.zrem(APPROVAL_OUTBOX_KEY, member);
    }
    return published;
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
