import { type Effect, type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { SESSION_CLAIM_MS } from '../adapters/redis/session-store.js';
import type { EffectLedger, LedgerScope } from '../policy/ports/effect-ledger.js';
import type { IdempotencyKeys } from '../policy/ports/idempotency-keys.js';
import type { SessionRegistry } from '../policy/ports/session-registry.js';
import { type IdempotencyEntry, idempotencyEntrySchema } from '../policy/run/idempotency.js';
import { held, MemoryRuns } from './memory-runs.js';

/** The effect ledger in memory: a step's writes refused once its run finished (or without a run), as record-effect-2.lua does. */
export class MemoryEffectLedger implements EffectLedger {
  constructor(private readonly runs: MemoryRuns) {}

  async get(runId: string, key: string): Promise<Effect | null> {
    return this.runs.effects.get(runId)?.get(key) ?? null;
  }

  /** What `write` did: written, held (an intent over an entry), or refused (a step's run finished). */
  private write(
    runId: string,
    mode: 'intent' | 'result',
    key: string,
    effect: Effect,
    scope: LedgerScope,
  ): 'written' | Effect | 'finished' {
    if (scope === 'step' && this.runs.ledgerClosed(runId)) return 'finished';
    const ledger = held(this.runs.effects, runId, () => new Map<string, Effect>());
    const recorded = ledger.get(key);
    if (mode === 'intent' && recorded) return recorded;
    ledger.set(key, effect);
    return 'written';
  }

  async recordIntent(runId: string, key: string, tool: string, scope: 'undo'): Promise<Effect | null>;
  async recordIntent(runId: string, key: string, tool: string, scope?: 'step'): Promise<Effect | null | 'finished'>;
  async recordIntent(runId: string, key: string, tool: string, scope: LedgerScope = 'step'): Promise<Effect | null | 'finished'> {
    const wrote = this.write(runId, 'intent', key, { state: 'intent', tool, at: new Date().toISOString() }, scope);
    return wrote === 'written' ? null : wrote;
  }

  async recordHandle(runId: string, key: string, tool: string, handle: string): Promise<boolean> {
    return this.write(runId, 'result', key, { state: 'intent', tool, at: new Date().toISOString(), handle }, 'step') === 'written';
  }

  async clearIntent(runId: string, key: string): Promise<void> {
    this.runs.effects.get(runId)?.delete(key);
  }

  async recordResult(
    runId: string,
    key: string,
    tool: string,
    ok: boolean,
    observation: string,
    scope: LedgerScope = 'step',
  ): Promise<boolean> {
    const done: Effect = { state: 'done', tool, at: new Date().toISOString(), ok, observation };
    return this.write(runId, 'result', key, done, scope) === 'written';
  }
}

type SessionRun = Pick<RunRecord, 'id' | 'tenantId' | 'userId' | 'sessionId'>;
const sessionKey = (s: { tenantId: string; userId: string }, sessionId: string) => `${s.tenantId} ${s.userId} ${sessionId}`;

/**
 * Sessions in memory, as RedisSessions: one holder marker per session (`<runId> <ms>`),
 * only the head of its queue may claim while runs wait, and a holder without a record
 * counts as busy for SESSION_CLAIM_MS. Keeps no TTLs.
 */
export class MemorySessions implements SessionRegistry {
  private readonly holders = new Map<string, string>();
  private readonly queues = new Map<string, string[]>();

  constructor(
    private readonly runs: MemoryRuns,
    private readonly now: () => number = Date.now,
  ) {
    runs.releaseSession = (run) => this.releaseSession(run);
  }

  async claimSession(run: RunRecord): Promise<string | null> {
    if (!run.sessionId) return null;
    const key = sessionKey(run, run.sessionId);
    const head = this.queues.get(key)?.[0];
    if (head && head !== run.id) return head;
    const marker = this.holders.get(key);
    const [holder = '', claimedAt] = marker?.split(' ') ?? [];
    if (marker && holder !== run.id) {
      const holderRun = await this.runs.get(holder);
      if (holderRun ? !TERMINAL_STATUSES.includes(holderRun.status) : this.now() - Number(claimedAt ?? 0) < SESSION_CLAIM_MS) return holder;
    }
    this.holders.set(key, `${run.id} ${this.now()}`);
    return null;
  }

  async sessionHolder(run: Pick<RunRecord, 'tenantId' | 'userId' | 'sessionId'>): Promise<string | null> {
    if (!run.sessionId) return null;
    return this.holders.get(sessionKey(run, run.sessionId))?.split(' ')[0] ?? null;
  }

  async releaseSession(run: SessionRun): Promise<void> {
    if (!run.sessionId) return;
    const key = sessionKey(run, run.sessionId);
    if (this.holders.get(key)?.split(' ')[0] === run.id) this.holders.delete(key);
  }

  async joinSessionQueue(run: SessionRun): Promise<void> {
    if (!run.sessionId) return;
    const key = sessionKey(run, run.sessionId);
    this.queues.set(key, [...(this.queues.get(key) ?? []), run.id]);
  }

  async sessionQueueHead(session: { tenantId: string; userId: string; sessionId: string }): Promise<string | null> {
    return this.queues.get(sessionKey(session, session.sessionId))?.[0] ?? null;
  }

  async leaveSessionQueue(run: SessionRun): Promise<void> {
    if (!run.sessionId) return;
    const key = sessionKey(run, run.sessionId);
    const left = (this.queues.get(key) ?? []).filter((id) => id !== run.id);
    if (left.length) this.queues.set(key, left);
    else this.queues.delete(key);
  }

  async copySession(tenantId: string, userId: string, from: string, to: string): Promise<boolean> {
    const source = this.runs.sessionRuns.get(sessionKey({ tenantId, userId }, from));
    const target = sessionKey({ tenantId, userId }, to);
    if (!source || this.runs.sessionRuns.has(target)) return false;
    this.runs.sessionRuns.set(target, new Map(source));
    return true;
  }

  async sessionRunIds(tenantId: string, userId: string, sessionId: string, limit = 200): Promise<string[]> {
    return [...(this.runs.sessionRuns.get(sessionKey({ tenantId, userId }, sessionId)) ?? [])]
      .sort(([a, at], [b, bt]) => at - bt || (a < b ? -1 : a > b ? 1 : 0))
      .slice(-limit)
      .map(([id]) => id);
  }
}

/** Idempotency-Keys in memory, with their TTLs (a claim lapses, as in Redis). */
export class MemoryIdempotencyKeys implements IdempotencyKeys {
  private readonly keys = new Map<string, { json: string; expiresAt: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  private current(key: string): string | null {
    const k = this.keys.get(key);
    if (k && k.expiresAt > this.now()) return k.json;
    this.keys.delete(key);
    return null;
  }

  async claim(key: string, claim: IdempotencyEntry, ttlSeconds: number): Promise<IdempotencyEntry | null> {
    const taken = this.current(key);
    if (taken) return idempotencyEntrySchema.parse(JSON.parse(taken));
    this.keys.set(key, { json: JSON.stringify(claim), expiresAt: this.now() + ttlSeconds * 1000 });
    return null;
  }

  async bind(key: string, claim: IdempotencyEntry, ttlSeconds: number): Promise<void> {
    if (this.current(key) === JSON.stringify(claim))
      this.keys.set(key, { json: JSON.stringify({ ...claim, bound: true }), expiresAt: this.now() + ttlSeconds * 1000 });
  }

  async release(key: string, claim: IdempotencyEntry): Promise<void> {
    if (this.current(key) === JSON.stringify(claim)) this.keys.delete(key);
  }
}

/** The persistence ports in memory over one shared state, as a process's Redis stores share one Redis. */
export function createMemoryStores(now: () => number = Date.now) {
  const runs = new MemoryRuns();
  return {
    runs,
    journal: runs,
    ledger: new MemoryEffectLedger(runs),
    sessions: new MemorySessions(runs, now),
    idempotencyKeys: new MemoryIdempotencyKeys(now),
  };
}
