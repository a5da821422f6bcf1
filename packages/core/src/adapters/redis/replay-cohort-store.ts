import { principalSchema } from '@rein/contract';
import { z } from 'zod';
import { tenantKeys } from '../../shared/keys.js';
import { OpenCohortResult, type ReserveResult, type ScriptGateway, scriptGateway } from './lua-scripts.js';
import { type RedisClient, type RedisCommand, sendCommands } from './redis.js';

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
 * started yet (a list each start pops from), original → replay, the replays whose finish was
 * counted (a finish hook may run again: only its first counts), the tokens spent by finished
 * replays plus those held by running ones, how many run, and skipped originals.
 */
export class ReplayCohortStore {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;

  constructor(
    redis: RedisClient,
    private readonly ttlSeconds: number,
  ) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  /** Admits the cohort unless its tenant runs `max` already (`false`); one silent for `staleMs` no longer counts. */
  async open(doc: CohortDoc, max: number, staleMs: number, now: number): Promise<boolean> {
    const open = tenantKeys(doc.principal.tenantId).openReplayCohorts;
    const result = await this.scripts.openCohort({ open }, { id: doc.id, nowMs: now, staleBeforeMs: now - staleMs, max });
    return result === OpenCohortResult.Opened;
  }

  /** The cohort made progress (a replay finished): it still counts among its tenant's open ones. */
  async touch(tenantId: string, id: string, now: number): Promise<void> {
    await this.redis.zadd(tenantKeys(tenantId).openReplayCohorts, 'XX', now, id);
  }

  /** The cohort ended (nothing left to start, none running): it no longer counts. */
  async closeIfDone(tenantId: string, id: string): Promise<void> {
    const t = tenantKeys(tenantId);
    const k = t.replayCohort(id);
    const [left, running] = (await sendCommands(this.redis, [
      ['llen', k.pending],
      ['get', k.running],
    ])) as [number, string | null];
    if (left === 0 && Number(running ?? 0) === 0) await this.redis.zrem(t.openReplayCohorts, id);
  }

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

  /** An original taken but not started (no slot, or its limit does not fit yet) goes back to the front. */
  async putBack(tenantId: string, id: string, original: string): Promise<void> {
    await this.redis.lpush(tenantKeys(tenantId).replayCohort(id).pending, original);
  }

  /** Holds `tokens` of the cohort's budget and one of its slots for a replay about to start. */
  async reserve(doc: CohortDoc, tokens: number): Promise<ReserveResult> {
    const k = tenantKeys(doc.principal.tenantId).replayCohort(doc.id);
    return this.scripts.reserveCohortReplay(k, {
      maxTokens: doc.maxTokens,
      tokens,
      concurrency: doc.concurrency,
      ttlSeconds: this.ttlSeconds,
    });
  }

  /** Gives back a reservation whose replay never started. */
  async release(tenantId: string, id: string, tokens: number): Promise<void> {
    const k = tenantKeys(tenantId).replayCohort(id);
    await sendCommands(this.redis, [
      ['decrby', k.tokens, tokens],
      ['decr', k.running],
    ]);
  }

  /** The replay started, holding `held` tokens until its finish is counted. */
  async started(tenantId: string, id: string, original: string, replay: string, held: number): Promise<void> {
    const k = tenantKeys(tenantId).replayCohort(id);
    await sendCommands(this.redis, [
      ['hset', k.replays, original, replay],
      ['expire', k.replays, this.ttlSeconds],
      ['hset', k.held, replay, held],
      ['expire', k.held, this.ttlSeconds],
    ]);
  }

  async skip(tenantId: string, id: string, original: string): Promise<void> {
    const k = tenantKeys(tenantId).replayCohort(id);
    await sendCommands(this.redis, [
      ['sadd', k.skipped, original],
      ['expire', k.skipped, this.ttlSeconds],
    ]);
  }

  /** Counts a replay's finish once: what it held becomes what it spent, and its slot is freed. */
  async finished(tenantId: string, id: string, replay: string, spent: number): Promise<void> {
    const k = tenantKeys(tenantId).replayCohort(id);
    await this.scripts.finishCohortReplay(k, { replay, spent, ttlSeconds: this.ttlSeconds });
  }
}
