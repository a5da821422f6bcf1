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
  replaceIfSame: { file: 'replace-if-same-1.lua', keys: 1 },
  hsetIfSame: { file: 'hset-if-same-1.lua', keys: 1 },
  markArchived: { file: 'mark-archived-1.lua', keys: 1 },
  /** Its key count varies with the run's keys: the first argument says it. */
  dropRun: { file: 'drop-run.lua', keys: undefined },
} as const;

/** The commands `defineCommand` adds, positional as Redis takes them; only the gateway below calls them. */
type Positional = Record<keyof typeof scripts, (...keysAndArgs: string[]) => Promise<unknown>>;

/** Registers the Lua scripts on a connection once (EVALSHA with EVAL fallback, via ioredis). */
function registered(redis: RedisClient): Positional {
  for (const [name, { file, keys }] of Object.entries(scripts)) {
    if (!(name in redis)) redis.defineCommand(name, { ...(keys !== undefined ? { numberOfKeys: keys } : {}), lua: load(file) });
  }
  return redis as unknown as Positional;
}

const str = (n: number) => String(n);
const flag = (b: boolean) => (b ? '1' : '0');

/**
 * One typed method per Lua script: its keys and arguments by name, numbers and flags as
 * values, replies as the script's return codes. Each script's header comment (lua/*.lua)
 * says what its keys and arguments are; the order here is that header's.
 */
export function scriptGateway(redis: RedisClient) {
  const r = registered(redis);
  return {
    createRun: (k: { run: string; messages: string; events: string }, a: { run: string; event: string; messages: readonly string[] }) =>
      r.createRun(k.run, k.messages, k.events, a.run, a.event, ...a.messages) as Promise<CreateResult>,
    commitRun: (
      k: {
        run: string;
        messages: string;
        steps: string;
        approvals: string;
        events: string;
        decisions: string;
        effects: string;
        snapshots: string;
        blobs: string;
      },
      a: {
        fromVersion: number;
        run: string;
        step?: { index: number; json: string } | undefined;
        ttlSeconds: number;
        messages: readonly string[];
        /** Approval id and JSON pairs, flat. */
        approvals: readonly string[];
        events: readonly string[];
      },
    ) =>
      r.commitRun(
        k.run,
        k.messages,
        k.steps,
        k.approvals,
        k.events,
        k.decisions,
        k.effects,
        k.snapshots,
        k.blobs,
        str(a.fromVersion),
        a.run,
        a.step ? str(a.step.index) : '',
        a.step?.json ?? '',
        str(a.ttlSeconds),
        str(a.messages.length),
        str(a.approvals.length / 2),
        str(a.events.length),
        ...a.messages,
        ...a.approvals,
        ...a.events,
      ) as Promise<CommitResult>,
    admitRun: (
      k: { active: string; usage: string; parked: string },
      a: { runId: string; maxConcurrentRuns: number; tokensPerDay: number; costMicrosPerDay: number; maxParkedRuns: number },
    ) =>
      r.admitRun(
        k.active,
        k.usage,
        k.parked,
        a.runId,
        str(a.maxConcurrentRuns),
        str(a.tokensPerDay),
        str(a.costMicrosPerDay),
        str(a.maxParkedRuns),
      ) as Promise<AdmitResult>,
    takeSlot: (k: { active: string; waiting: string }, a: { max: number; freed: string }) =>
      r.takeSlot(k.active, k.waiting, str(a.max), a.freed) as Promise<string | null>,
    enterFairShare: (k: { ring: string; line: string }, a: { tenantId: string; runId: string }) =>
      r.enterFairShare(k.ring, k.line, a.tenantId, a.runId) as Promise<number>,
    takeTurn: (k: { slots: string; ring: string; line: string }, a: { tenantId: string; max: number }) =>
      r.takeTurn(k.slots, k.ring, k.line, a.tenantId, str(a.max)) as Promise<string | TurnResult>,
    acquireLease: (
      k: { leases: string; open: string; tripped: string },
      a: { leaseId: string; nowMs: number; ttlMs: number; limit: number },
    ) =>
      r.acquireLease(k.leases, k.open, k.tripped, a.leaseId, str(a.nowMs), str(a.ttlMs), str(a.limit)) as Promise<
        [LeaseResult, string | null, string | null]
      >,
    reportBreakerOpen: (
      k: { reporters: string; open: string; tripped: string; probe: string },
      a: { worker: string; nowMs: number; windowMs: number; quorum: number; resetTimeoutMs: number },
    ) =>
      r.reportBreakerOpen(
        k.reporters,
        k.open,
        k.tripped,
        k.probe,
        a.worker,
        str(a.nowMs),
        str(a.windowMs),
        str(a.quorum),
        str(a.resetTimeoutMs),
      ) as Promise<BreakerReport>,
    settleIdempotencyKey: (k: { key: string }, a: { claim: string; next: string; ttlSeconds: number }) =>
      r.settleIdempotencyKey(k.key, a.claim, a.next, str(a.ttlSeconds)) as Promise<SettleResult>,
    claimSession: (k: { active: string; queue: string }, a: { runId: string; ttlSeconds: number; replace: string }) =>
      r.claimSession(k.active, k.queue, a.runId, str(a.ttlSeconds), a.replace) as Promise<[ClaimResult, string, number]>,
    releaseSession: (k: { active: string }, a: { runId: string }) => r.releaseSession(k.active, a.runId) as Promise<number>,
    chargeUsage: (
      k: { usage: string; charged: string; chargedBefore: string },
      a: { runId: string; tokens: number; costMicros: number; ttlSeconds: number; beganBefore: boolean },
    ) =>
      r.chargeUsage(
        k.usage,
        k.charged,
        k.chargedBefore,
        a.runId,
        str(a.tokens),
        str(a.costMicros),
        str(a.ttlSeconds),
        flag(a.beganBefore),
      ) as Promise<number>,
    addWebhook: (k: { webhooks: string }, a: { id: string; json: string; max: number }) =>
      r.addWebhook(k.webhooks, a.id, a.json, str(a.max)) as Promise<AddWebhookResult>,
    addSchedule: (k: { all: string; tenant: string }, a: { id: string; json: string; max: number }) =>
      r.addSchedule(k.all, k.tenant, a.id, a.json, str(a.max)) as Promise<AddScheduleResult>,
    appendAudit: (
      k: { entries: string; byTime: string; head: string },
      a: { seq: number; prevHash: string; json: string; hash: string; atMs: number },
    ) => r.appendAudit(k.entries, k.byTime, k.head, str(a.seq), a.prevHash, a.json, a.hash, str(a.atMs)) as Promise<number>,
    recordEffect: (
      k: { run: string; effects: string },
      a: { mode: 'intent' | 'result'; key: string; entry: string; ttlSeconds: number; liveOnly: boolean },
    ) => r.recordEffect(k.run, k.effects, a.mode, a.key, a.entry, str(a.ttlSeconds), flag(a.liveOnly)) as Promise<[EffectWrite, string?]>,
    recordAfterFinish: (k: { run: string; steps: string; events: string }, a: { stepIndex: number; step: string; event: string }) =>
      r.recordAfterFinish(k.run, k.steps, k.events, str(a.stepIndex), a.step, a.event) as Promise<number>,
    reserveCohortReplay: (
      k: { tokens: string; running: string },
      a: { maxTokens: number; tokens: number; concurrency: number; ttlSeconds: number },
    ) =>
      r.reserveCohortReplay(
        k.tokens,
        k.running,
        str(a.maxTokens),
        str(a.tokens),
        str(a.concurrency),
        str(a.ttlSeconds),
      ) as Promise<ReserveResult>,
    finishCohortReplay: (
      k: { finished: string; held: string; tokens: string; running: string },
      a: { replay: string; spent: number; ttlSeconds: number },
    ) => r.finishCohortReplay(k.finished, k.held, k.tokens, k.running, a.replay, str(a.spent), str(a.ttlSeconds)) as Promise<number>,
    openCohort: (k: { open: string }, a: { id: string; nowMs: number; staleBeforeMs: number; max: number }) =>
      r.openCohort(k.open, a.id, str(a.nowMs), str(a.staleBeforeMs), str(a.max)) as Promise<OpenCohortResult>,
    putStoreItem: (k: { store: string }, a: { address: string; json: string; max: number }) =>
      r.putStoreItem(k.store, a.address, a.json, str(a.max)) as Promise<number>,
    putPushConfig: (k: { configs: string }, a: { field: string; json: string; max: number; ttlSeconds: number }) =>
      r.putPushConfig(k.configs, a.field, a.json, str(a.max), str(a.ttlSeconds)) as Promise<number>,
    replaceIfSame: (k: { key: string }, a: { held: string; next: string; ttlSeconds: number }) =>
      r.replaceIfSame(k.key, a.held, a.next, str(a.ttlSeconds)) as Promise<number>,
    hsetIfSame: (k: { hash: string }, a: { field: string; held: string; next: string }) =>
      r.hsetIfSame(k.hash, a.field, a.held, a.next) as Promise<number>,
    markArchived: (k: { run: string }, a: { at: string; revision: string }) => r.markArchived(k.run, a.at, a.revision) as Promise<number>,
    dropRun: (k: { events: string; others: readonly string[] }, a: { lastEventId: string }) =>
      r.dropRun(str(1 + k.others.length), k.events, ...k.others, a.lastEventId) as Promise<number>,
  };
}

export type ScriptGateway = ReturnType<typeof scriptGateway>;
