import { z } from 'zod';
import { tenantKeys } from '../keys.js';
import { type RedisClient, type RedisCommand, sendCommands } from '../redis.js';
import { principalSchema } from '../schemas/identity.js';

/** A cohort's fixed part: who asked, what it replays with, and the originals it sampled (in order). */
export const cohortDocSchema = z.object({
  schemaVersion: z.literal(1),
  id: z.string(),
  principal: principalSchema,
  agent: z.string(),
  settings: z.object({ model: z.string().optional(), instructions: z.string().optional(), version: z.string().optional() }),
  originals: z.array(z.string()),
  concurrency: z.number().int().min(1),
  maxTokens: z.number().int().min(1),
  createdAt: z.string(),
});
export type CohortDoc = z.infer<typeof cohortDocSchema>;

/** Where a cohort's originals are: replayed (original → replay) or skipped. */
export interface CohortState {
  replays: Map<string, string>;
  skipped: Set<string>;
}

/**
 * A cohort replay in Redis (all its keys in its tenant's slot): the doc, the originals not
 * started yet (a list each finish pops from), original → replay, the replays whose finish was
 * counted (a finish hook may run twice: only its first counts), tokens spent, skipped originals.
 */
export class ReplayCohortStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly ttlSeconds: number,
  ) {}

  async create(doc: CohortDoc): Promise<void> {
    const k = tenantKeys(doc.principal.tenantId).replayCohort(doc.id);
    const commands: RedisCommand[] = [['set', k.doc, JSON.stringify(cohortDocSchema.parse(doc)), 'EX', this.ttlSeconds]];
    if (doc.originals.length) commands.push(['rpush', k.pending, ...doc.originals], ['expire', k.pending, this.ttlSeconds]);
    await sendCommands(this.redis, commands);
  }

  async get(tenantId: string, id: string): Promise<CohortDoc | null> {
    const raw = await this.redis.get(tenantKeys(tenantId).replayCohort(id).doc);
    return raw ? cohortDocSchema.parse(JSON.parse(raw)) : null;
  }

  async state(tenantId: string, id: string): Promise<CohortState> {
    const k = tenantKeys(tenantId).replayCohort(id);
    const [replays, skipped] = await Promise.all([this.redis.hgetall(k.replays), this.redis.smembers(k.skipped)]);
    return { replays: new Map(Object.entries(replays)), skipped: new Set(skipped) };
  }

  /** The next original to replay, if any is left. */
  async takeNext(tenantId: string, id: string): Promise<string | null> {
    return this.redis.lpop(tenantKeys(tenantId).replayCohort(id).pending);
  }

  async started(tenantId: string, id: string, original: string, replay: string): Promise<void> {
    const k = tenantKeys(tenantId).replayCohort(id);
    await sendCommands(this.redis, [
      ['hset', k.replays, original, replay],
      ['expire', k.replays, this.ttlSeconds],
    ]);
  }

  async skip(tenantId: string, id: string, original: string): Promise<void> {
    const k = tenantKeys(tenantId).replayCohort(id);
    await sendCommands(this.redis, [
      ['sadd', k.skipped, original],
      ['expire', k.skipped, this.ttlSeconds],
    ]);
  }

  /** Whether a replay's finish was counted already (a finish hook may run again). */
  async counted(tenantId: string, id: string, replay: string): Promise<boolean> {
    return (await this.redis.sismember(tenantKeys(tenantId).replayCohort(id).finished, replay)) === 1;
  }

  /** Tokens the cohort's counted replays spent. */
  async tokens(tenantId: string, id: string): Promise<number> {
    return Number((await this.redis.get(tenantKeys(tenantId).replayCohort(id).tokens)) ?? 0);
  }

  /** Counts a replay's finish once: its tokens are added to the cohort's. */
  async finished(tenantId: string, id: string, replay: string, tokens: number): Promise<void> {
    const k = tenantKeys(tenantId).replayCohort(id);
    const [added] = (await sendCommands(this.redis, [
      ['sadd', k.finished, replay],
      ['expire', k.finished, this.ttlSeconds],
    ])) as [number];
    if (added === 0) return;
    await sendCommands(this.redis, [
      ['incrby', k.tokens, tokens],
      ['expire', k.tokens, this.ttlSeconds],
    ]);
  }
}
