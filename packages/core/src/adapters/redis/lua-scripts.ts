import { readFileSync } from 'node:fs';
import type { RedisClient } from './redis.js';

/** Return codes of commit-run-9.lua. */
export enum CommitResult {
  Committed = 1,
  Stale = 0,
  NoSuchRun = -1,
}

/** Return codes of record-effect-2.lua (the first element of its reply). */
export enum EffectWrite {
  Written = 1,
  Held = 0,
  RunFinished = -1,
}

/** Return codes of take-turn-3.lua besides the run id it hands a slot. */
export enum TurnResult {
  HeadMoved = -1,
  SlotsTaken = -2,
  LineEmpty = -3,
}

/** Return codes of create-run-3.lua. */
export enum CreateResult {
  Created = 1,
  Exists = 0,
}

/** Return codes of admit-run-3.lua. */
export enum AdmitResult {
  Admitted = 1,
  TooManyRuns = -1,
  TokensUsedUp = -2,
  CostUsedUp = -3,
  TooManyParked = -4,
}

/** Return codes of settle-idempotency-key-1.lua. */
export enum SettleResult {
  Settled = 1,
  NotOurs = 0,
}

/** Return codes of claim-session-2.lua (the first element of its reply). */
export enum ClaimResult {
  Claimed = 1,
  Held = 0,
  Queued = 2,
}

/** Return codes of acquire-lease-3.lua (the first element of its reply). */
export enum LeaseResult {
  Leased = 1,
  Full = 0,
}

/** Return codes of add-schedule-2.lua. */
export enum AddScheduleResult {
  Added = 1,
  AtLimit = 0,
}

/** Return codes of report-breaker-open-4.lua. */
export enum BreakerReport {
  FleetOpened = 1,
  Reported = 0,
}

/** Return codes of add-webhook-1.lua. */
export enum AddWebhookResult {
  Added = 1,
  AtLimit = 0,
}

/** Return codes of reserve-cohort-replay-2.lua. */
export enum ReserveResult {
  Reserved = 1,
  NoSlot = 0,
  WaitForRelease = -1,
  NeverFits = -2,
}

/** Return codes of open-cohort-1.lua. */
export enum OpenCohortResult {
  Opened = 1,
  AtLimit = 0,
}

const load = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');

const scripts = {
  createRun: { file: 'create-run-3.lua', keys: 3 },
  commitRun: { file: 'commit-run-9.lua', keys: 9 },
  admitRun: { file: 'admit-run-3.lua', keys: 3 },
  takeSlot: { file: 'take-slot-2.lua', keys: 2 },
  enterFairShare: { file: 'enter-fair-share-2.lua', keys: 2 },
  takeTurn: { file: 'take-turn-3.lua', keys: 3 },
  acquireLease: { file: 'acquire-lease-3.lua', keys: 3 },
  reportBreakerOpen: { file: 'report-breaker-open-4.lua', keys: 4 },
  settleIdempotencyKey: { file: 'settle-idempotency-key-1.lua', keys: 1 },
  claimSession: { file: 'claim-session-2.lua', keys: 2 },
  releaseSession: { file: 'release-session-1.lua', keys: 1 },
  chargeUsage: { file: 'charge-usage-3.lua', keys: 3 },
  addWebhook: { file: 'add-webhook-1.lua', keys: 1 },
  addSchedule: { file: 'add-schedule-2.lua', keys: 2 },
  appendAudit: { file: 'append-audit-3.lua', keys: 3 },
  recordEffect: { file: 'record-effect-2.lua', keys: 2 },
  recordAfterFinish: { file: 'record-after-finish-3.lua', keys: 3 },
  reserveCohortReplay: { file: 'reserve-cohort-replay-2.lua', keys: 2 },
  finishCohortReplay: { file: 'finish-cohort-replay-4.lua', keys: 4 },
  openCohort: { file: 'open-cohort-1.lua', keys: 1 },
  putStoreItem: { file: 'put-store-item-1.lua', keys: 1 },
  putPushConfig: { file: 'put-push-config-1.lua', keys: 1 },
} as const;

export interface ReinScripts {
  createRun(k1: string, k2: string, k3: string, ...argv: string[]): Promise<number>;
  commitRun(...keysAndArgs: string[]): Promise<number>;
  admitRun(active: string, usage: string, parked: string, ...argv: string[]): Promise<number>;
  takeSlot(active: string, waiting: string, max: string, freed: string): Promise<string | null>;
  enterFairShare(ring: string, line: string, tenantId: string, runId: string): Promise<number>;
  takeTurn(slots: string, ring: string, line: string, tenantId: string, max: string): Promise<string | TurnResult>;
  acquireLease(leases: string, open: string, tripped: string, ...argv: string[]): Promise<[LeaseResult, string | null, string | null]>;
  reportBreakerOpen(reporters: string, open: string, tripped: string, probe: string, ...argv: string[]): Promise<BreakerReport>;
  settleIdempotencyKey(key: string, claim: string, next: string, ttlSeconds: string): Promise<number>;
  claimSession(active: string, queue: string, runId: string, ttlSeconds: string, replace: string): Promise<[ClaimResult, string, number]>;
  releaseSession(active: string, runId: string): Promise<number>;
  chargeUsage(usage: string, charged: string, chargedBefore: string, ...argv: string[]): Promise<number>;
  addWebhook(webhooks: string, id: string, json: string, max: string): Promise<number>;
  addSchedule(all: string, tenant: string, id: string, json: string, max: string): Promise<number>;
  appendAudit(entries: string, byTime: string, head: string, ...argv: string[]): Promise<number>;
  recordEffect(run: string, effects: string, ...argv: string[]): Promise<[EffectWrite, string?]>;
  recordAfterFinish(run: string, steps: string, events: string, ...argv: string[]): Promise<number>;
  reserveCohortReplay(tokens: string, running: string, ...argv: string[]): Promise<ReserveResult>;
  finishCohortReplay(finished: string, held: string, tokens: string, running: string, ...argv: string[]): Promise<number>;
  openCohort(open: string, id: string, now: string, staleBefore: string, max: string): Promise<OpenCohortResult>;
  putStoreItem(store: string, address: string, json: string, max: string): Promise<number>;
  putPushConfig(configs: string, field: string, json: string, max: string, ttlSeconds: string): Promise<number>;
}

/** Registers the Lua scripts on a connection (EVALSHA with EVAL fallback, via ioredis). */
export function withScripts(redis: RedisClient): RedisClient & ReinScripts {
  for (const [name, { file, keys }] of Object.entries(scripts)) {
    if (!(name in redis)) redis.defineCommand(name, { numberOfKeys: keys, lua: load(file) });
  }
  return redis as RedisClient & ReinScripts;
}
