import type { RunRecord } from '@rein/contract';
import type { Quota, Quotas } from '../../shared/config.js';
import { fairShareKeys, tenantKeys } from '../../shared/keys.js';
import { AdmitResult, type ScriptGateway, scriptGateway, TurnResult } from './lua-scripts.js';
import { type RedisClient, type RedisCommand, sendCommands } from './redis.js';
import { refuseOn } from './script-refusals.js';

const DAY_SECONDS = 86_400;
/** Parked runs a tenant may have when its quota names no `maxParkedRuns`: ten times its concurrent runs. */
export const maxParkedRuns = (q: Quota) => q.maxParkedRuns ?? 10 * q.maxConcurrentRuns;
const day = (at: number) => new Date(at).toISOString().slice(0, 10);

/**
 * What admitting a run decided: it starts now; or it waits, in its tenant's line for one of
 * the tenant's slots (`waiting_slot`, over its concurrency limit with `queueBeyondLimit`), or
 * holding one, for a fleet-wide turn (`waiting_turn`, `fairShareSlots`). A waiting run joins
 * its line (`wait`) only once its record exists.
 */
export type Admission = 'admitted' | 'waiting_slot' | 'waiting_turn';

/**
 * Per-tenant quotas held in Redis, so the whole fleet shares them: concurrent runs (a
 * set of active run ids — it heals itself, unlike a counter), runs parked waiting for a
 * person (a set of their own, with a larger limit: a hundred runs waiting for approvers
 * must not stop the tenant's new ones), and tokens and cost per UTC day.
 */
export class TenantQuotas {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;
  /** Day keys (usage and charged marks, per tenant) this process already gave their TTL. */
  private readonly expiring = new Set<string>();

  constructor(
    redis: RedisClient,
    private readonly quotas: Quotas,
    private readonly now: () => number = Date.now,
  ) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  quotaOf(tenantId: string): Quota {
    return this.quotas.tenants[tenantId] ?? this.quotas.default;
  }

  private usageKey(tenantId: string) {
    return tenantKeys(tenantId).usage(day(this.now()));
  }

  /**
   * Admits a new run or throws 429 naming the quota. Over the concurrency limit of a
   * tenant with `queueBeyondLimit`, the answer is `waiting_slot` instead (the run is to
   * wait in the tenant's line: takeSlot starts it later); the other quotas still refuse.
   * Joining a line is left to `wait`, after the run's record is written: a slot handed to
   * a run whose record does not exist yet would be taken for one that ended, and given away.
   */
  async admit(tenantId: string, runId: string): Promise<Admission> {
    const q = this.quotaOf(tenantId);
    const result = await this.scripts.admitRun(
      { active: tenantKeys(tenantId).active, usage: this.usageKey(tenantId), parked: tenantKeys(tenantId).parked },
      {
        runId,
        maxConcurrentRuns: q.maxConcurrentRuns,
        tokensPerDay: q.tokensPerDay,
        costMicrosPerDay: Math.round(q.costPerDayUsd * 1_000_000),
        maxParkedRuns: maxParkedRuns(q),
      },
    );
    if (result === AdmitResult.TooManyRuns && q.queueBeyondLimit) return 'waiting_slot';
    // Within its tenant's limit, a queueing tenant's run still waits its turn for a fleet-wide slot.
    if (result === AdmitResult.Admitted && this.fairShared(tenantId)) return 'waiting_turn';
    refuseOn.admitRun(result, { tenantId, ...q, maxParkedRuns: maxParkedRuns(q) });
    return 'admitted';
  }

  /** A created run that admission told to wait joins its line (a `slot` job then looks for a free slot). */
  async wait(tenantId: string, runId: string, admission: Exclude<Admission, 'admitted'>): Promise<void> {
    if (admission === 'waiting_turn') await this.enterFairShare(tenantId, runId);
    else await this.redis.rpush(tenantKeys(tenantId).waiting, runId);
  }

  /**
   * Fair share: the run first in the tenant's waiting line, now holding a freed slot; null
   * when none is free or nobody waits. `freed`: a finished run of the tenant, out of the active set first.
   */
  async takeSlot(tenantId: string, freed?: string): Promise<string | null> {
    const t = tenantKeys(tenantId);
    return this.scripts.takeSlot(t, { max: this.quotaOf(tenantId).maxConcurrentRuns, freed: freed ?? '' });
  }

  /** Whether the tenant's runs share the fleet-wide slots (`fairShareSlots`, for `queueBeyondLimit` tenants). */
  fairShared(tenantId: string): boolean {
    return this.quotas.fairShareSlots !== undefined && this.quotaOf(tenantId).queueBeyondLimit === true;
  }

  /** A run holding its tenant's slot joins the tenant's line for a fleet-wide one (enter-fair-share-2.lua). */
  async enterFairShare(tenantId: string, runId: string): Promise<void> {
    await this.scripts.enterFairShare({ ring: fairShareKeys.ring, line: fairShareKeys.line(tenantId) }, { tenantId, runId });
  }

  /**
   * Fair share across tenants: a free fleet-wide slot handed to the oldest waiting run of
   * the tenant whose turn it is (take-turn-3.lua), round-robin; null when every slot is
   * taken or nobody waits. `freed`: a finished run whose slot is free.
   */
  async takeTurn(freed?: string): Promise<{ tenantId: string; runId: string } | null> {
    const max = this.quotas.fairShareSlots;
    if (max === undefined) return null;
    if (freed) await this.redis.srem(fairShareKeys.slots, freed);
    for (;;) {
      const head = await this.redis.lindex(fairShareKeys.ring, 0);
      if (head === null) return null;
      const taken = await this.scripts.takeTurn(
        { slots: fairShareKeys.slots, ring: fairShareKeys.ring, line: fairShareKeys.line(head) },
        { tenantId: head, max },
      );
      if (taken === TurnResult.SlotsTaken) return null;
      if (typeof taken === 'string') return { tenantId: head, runId: taken };
      // Another process took that turn, or the tenant had nobody left: read the head again.
    }
  }

  /** Whether the run is waiting in its tenant's line for a slot (its tenant's, or a fleet-wide one). */
  async waiting(tenantId: string, runId: string): Promise<boolean> {
    if ((await this.redis.lpos(tenantKeys(tenantId).waiting, runId)) !== null) return true;
    return this.fairShared(tenantId) && (await this.redis.lpos(fairShareKeys.line(tenantId), runId)) !== null;
  }

  /** Whatever the tenant's quota says now: a run given a fleet-wide slot under an earlier one gives it back too. */
  async release(tenantId: string, runId: string): Promise<void> {
    const t = tenantKeys(tenantId);
    await sendCommands(this.redis, [
      ['srem', t.active, runId],
      ['srem', t.parked, runId],
      ['lrem', t.waiting, 0, runId],
      ['srem', fairShareKeys.slots, runId],
      ['lrem', fairShareKeys.line(tenantId), 0, runId],
    ]);
  }

  /**
   * Brings the tenant's usage of today up to what the run spent in total (its record,
   * committed with each step): adds only what no earlier charge of the run added, in one
   * script in the tenant's slot. Safe to repeat, and a lost charge is made up by the
   * next one. Returns the tokens it added.
   */
  async charge(run: Pick<RunRecord, 'id' | 'tenantId' | 'usage' | 'costUsd' | 'createdAt'>): Promise<number> {
    const t = tenantKeys(run.tenantId);
    const now = this.now();
    const today = day(now);
    const usage = t.usage(today);
    // A day key's TTL is set by each process's first charge to it, not by every charge.
    const ttl = this.expiring.has(usage) ? 0 : 2 * DAY_SECONDS;
    const added = await this.scripts.chargeUsage(
      { usage, charged: t.charged(today), chargedBefore: t.charged(day(now - DAY_SECONDS * 1000)) },
      {
        runId: run.id,
        tokens: run.usage.totalTokens,
        costMicros: Math.round(run.costUsd * 1_000_000),
        ttlSeconds: ttl,
        beganBefore: run.createdAt.slice(0, 10) < today,
      },
    );
    if (ttl && added > 0) this.remember(usage);
    return added;
  }

  private remember(usageKey: string): void {
    if (this.expiring.size >= 10_000) this.expiring.clear(); // bounded: forgetting only costs an EXPIRE
    this.expiring.add(usageKey);
  }

  /** Whether a running run of this tenant must stop because today's quota is used up. */
  async exhausted(tenantId: string): Promise<boolean> {
    const read = this.usageRead(tenantId);
    const [reply] = await sendCommands(this.redis, [read.command]);
    return read.exhausted(reply);
  }

  /**
   * The same check as a command to send with others (the step's read sends it beside the
   * run's) and the verdict on its reply.
   */
  usageRead(tenantId: string): { command: RedisCommand; exhausted: (reply: unknown) => boolean } {
    const q = this.quotaOf(tenantId);
    return {
      command: ['hmget', this.usageKey(tenantId), 'tokens', 'costMicros'],
      exhausted: (reply) => {
        const [tokens, cost] = reply as [string | null, string | null];
        return Number(tokens ?? 0) >= q.tokensPerDay || Number(cost ?? 0) >= q.costPerDayUsd * 1_000_000;
      },
    };
  }
}
