import type { Redis } from 'ioredis';
import type { Quota, Quotas } from '../config.js';
import { ReinError } from '../errors.js';
import { tenantKeys } from '../keys.js';
import { AdmitResult, withScripts } from '../store/lua-scripts.js';
import type { RedisCommand } from '../store/run-store.js';

/** 429: the tenant is over one of its quotas; says which and what the limit is. */
export class QuotaExceededError extends ReinError {
  override readonly name = 'QuotaExceededError';
  constructor(code: string, message: string) {
    super(code, message, { status: 429 });
  }
}

const DAY_SECONDS = 86_400;
const day = (at: number) => new Date(at).toISOString().slice(0, 10);

/**
 * Per-tenant quotas held in Redis, so the whole fleet shares them: concurrent runs (a
 * set of active run ids — it heals itself, unlike a counter), and tokens and cost per
 * UTC day.
 */
export class TenantQuotas {
  private readonly redis: ReturnType<typeof withScripts>;
  /** Usage keys this process has already given their expiry. */
  private readonly expiring = new Set<string>();

  constructor(
    redis: Redis,
    private readonly quotas: Quotas,
    private readonly now: () => number = Date.now,
  ) {
    this.redis = withScripts(redis);
  }

  quotaOf(tenantId: string): Quota {
    return this.quotas.tenants[tenantId] ?? this.quotas.default;
  }

  private usageKey(tenantId: string) {
    return tenantKeys(tenantId).usage(day(this.now()));
  }

  /** Admits a new run or throws 429 naming the quota. */
  async admit(tenantId: string, runId: string): Promise<void> {
    const q = this.quotaOf(tenantId);
    const result = await this.redis.admitRun(
      tenantKeys(tenantId).active,
      this.usageKey(tenantId),
      runId,
      String(q.maxConcurrentRuns),
      String(q.tokensPerDay),
      String(Math.round(q.costPerDayUsd * 1_000_000)),
    );
    if (result === AdmitResult.TooManyRuns) {
      throw new QuotaExceededError(
        'quota_concurrent_runs',
        `tenant ${tenantId} already has ${q.maxConcurrentRuns} runs in progress; wait for one to finish`,
      );
    }
    if (result === AdmitResult.TokensUsedUp) {
      throw new QuotaExceededError('quota_tokens', `tenant ${tenantId} used its ${q.tokensPerDay} tokens for today (UTC)`);
    }
    if (result === AdmitResult.CostUsedUp) {
      throw new QuotaExceededError('quota_cost', `tenant ${tenantId} spent its ${q.costPerDayUsd} USD for today (UTC)`);
    }
  }

  async release(tenantId: string, runId: string): Promise<void> {
    await this.redis.srem(tenantKeys(tenantId).active, runId);
  }

  /** The writes that charge a tenant, sent with the step's post-commit indexes (one round trip). */
  usageCommands(tenantId: string, tokens: number, costUsd: number): RedisCommand[] {
    const key = this.usageKey(tenantId);
    const commands: RedisCommand[] = [
      ['hincrby', key, 'tokens', tokens],
      ['hincrby', key, 'costMicros', Math.round(costUsd * 1_000_000)],
    ];
    // A day's key needs its expiry set once, not on every step: once per process is enough.
    if (!this.expiring.has(key)) {
      if (this.expiring.size > 10_000) this.expiring.clear();
      this.expiring.add(key);
      commands.push(['expire', key, 2 * DAY_SECONDS]);
    }
    return commands;
  }

  /** Whether a running run of this tenant must stop because today's quota is used up. */
  async exhausted(tenantId: string): Promise<boolean> {
    const q = this.quotaOf(tenantId);
    const [tokens, cost] = await this.redis.hmget(this.usageKey(tenantId), 'tokens', 'costMicros');
    return Number(tokens ?? 0) >= q.tokensPerDay || Number(cost ?? 0) >= q.costPerDayUsd * 1_000_000;
  }
}
