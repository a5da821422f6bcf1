import { AsyncLocalStorage } from 'node:async_hooks';
import { type AuditEntry, type AuditRecord, auditEntrySchema, type SignedCheckpoint } from '@rein/contract';
import { auditHash, GENESIS_HASH } from '../../policy/audit/audit-chain.js';
import type { AuditSigner } from '../../policy/audit/receipts.js';
import { AUDIT_SUNK_KEY, AUDIT_TENANTS_KEY, tenantKeys } from '../../shared/keys.js';
import type { Logger } from '../../shared/logger.js';
import { type ScriptGateway, scriptGateway } from './lua-scripts.js';
import { type RedisClient, sendCommands } from './redis.js';

/** A loser of the head race retries; this many lost in a row means something is wrong. */
const APPEND_ATTEMPTS = 50;

/** An entry as Redis stored it: its seq, its time (ms) and its JSON, byte for byte. */
export interface StoredAuditEntry {
  seq: number;
  atMs: number;
  json: string;
}

/** A head copied out of Redis (`at`: when, ISO): a later log must still hold that entry. Signed when the fleet has an audit key. */
export interface AuditCheckpoint {
  seq: number;
  hash: string;
  at: string;
  keyId?: string;
  signature?: string;
}

/** Where signed checkpoints go beyond Rein's own stores (REIN_AUDIT_CHECKPOINT_SINK: a file, an HTTPS endpoint). */
export interface CheckpointSink {
  /** Names the sink in logs, without secrets. */
  readonly name: string;
  write(checkpoint: SignedCheckpoint): Promise<void>;
}

/** What makes the log provable outside Rein: the fleet's audit key, and a sink for its signed checkpoints. */
export interface AuditProof {
  signer: AuditSigner;
  sink?: CheckpointSink;
}

/** Entries appended within `collect` (one decision's request): what its receipt signs. */
const appended = new AsyncLocalStorage<AuditEntry[]>();

/** Where entries go beyond Redis's retention, and where heads are checkpointed (the PostgreSQL archive, archive/audit-archive.ts). */
export interface AuditColdStore {
  put(tenantId: string, entries: readonly StoredAuditEntry[]): Promise<void>;
  get(tenantId: string, seqs: readonly number[]): Promise<Map<number, string>>;
  /** The first seq at or after `fromMs`, or null. */
  firstSince(tenantId: string, fromMs: number): Promise<number | null>;
  putCheckpoint(tenantId: string, checkpoint: AuditCheckpoint): Promise<void>;
  latestCheckpoint(tenantId: string): Promise<AuditCheckpoint | null>;
  checkpointedTenants(): Promise<string[]>;
}

/** One tenant's checkpoint pass: a new head copied, nothing new, or a live log that no longer holds the last checkpoint. */
export type CheckpointOutcome = 'written' | 'unchanged' | 'behind';

/** With a cold store: entries older than `retentionMs` are copied there and trimmed from Redis. */
export interface AuditRetention {
  cold: AuditColdStore;
  retentionMs: number;
}

/** Entries one trim moves at most; the next append's trim takes the rest. */
const TRIM_BATCH = 500;

/**
 * A tenant's decision log in Redis: a hash chain appended by `append-audit-3.lua` (one
 * writer wins each `seq`), read by seq or time. Without an archive it is kept without a TTL
 * (it outlives the runs it names); with one, entries past the retention are copied to it
 * and then trimmed from Redis (the head stays), and reads find them there. An append
 * never throws into its caller, whose decision already stands: it logs.
 */
export class AuditLog {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;
  /** When this process last trimmed each tenant's log (at most once per retention, and per minute). */
  private readonly trimmed = new Map<string, number>();
  /** Tenants this process already named in AUDIT_TENANTS_KEY. */
  private readonly registered = new Set<string>();

  constructor(
    redis: RedisClient,
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
    private readonly retention?: AuditRetention,
    private readonly proof?: AuditProof,
  ) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  /** The fleet's audit key, when one is configured (REIN_AUDIT_SIGNING_KEY). */
  get signer(): AuditSigner | undefined {
    return this.proof?.signer;
  }

  /**
   * Runs `fn` and returns, beside its value, the entries appended while it ran (in its own
   * async context, so concurrent requests never see each other's): a decision route signs
   * the entry its decision wrote as that decision's receipt.
   */
  async collect<T>(fn: () => Promise<T>): Promise<{ value: T; entries: AuditEntry[] }> {
    const entries: AuditEntry[] = [];
    const value = await appended.run(entries, fn);
    return { value, entries };
  }

  /** Appends the records in order, each to its tenant's chain; then trims what is past retention. */
  async append(records: readonly AuditRecord[]): Promise<void> {
    for (const r of records) {
      try {
        const entry = await this.appendOne(r);
        appended.getStore()?.push(entry);
      } catch (err) {
        this.logger?.error({ err: (err as Error).message, tenantId: r.tenantId, action: r.action }, 'could not append to the decision log');
      }
    }
    const tenants = new Set(records.map((r) => r.tenantId));
    // Named once for the checkpoint pass, which copies each such tenant's head to the archive.
    const unnamed = this.retention || this.proof?.sink ? [...tenants].filter((t) => !this.registered.has(t)) : [];
    if (unnamed.length) {
      await this.redis
        .sadd(AUDIT_TENANTS_KEY, ...unnamed)
        .then(() => {
          if (this.registered.size > 10_000) this.registered.clear(); // bounded: forgetting only costs a repeated SADD
          for (const t of unnamed) this.registered.add(t);
        })
        .catch((err: Error) => this.logger?.warn({ err: err.message }, 'could not name the tenant for decision-log checkpoints'));
    }
    for (const tenantId of tenants) {
      const last = this.trimmed.get(tenantId) ?? 0;
      if (!this.retention || this.now() - last < Math.min(this.retention.retentionMs, 60_000)) continue;
      this.trimmed.set(tenantId, this.now());
      if (this.trimmed.size > 10_000) this.trimmed.clear(); // bounded: forgetting only costs an early trim
      await this.trim(tenantId).catch((err: Error) =>
        this.logger?.warn({ err: err.message, tenantId }, 'could not move old decision-log entries to the archive'),
      );
    }
  }

  /**
   * Copies the tenant's entries older than the retention to the cold store, then drops
   * them from Redis: copied first, so a crash in between leaves an entry in both, never in
   * neither. Returns how many moved (at most TRIM_BATCH).
   */
  async trim(tenantId: string): Promise<number> {
    if (!this.retention) return 0;
    const k = tenantKeys(tenantId);
    const old = await this.redis.zrangebyscore(
      k.auditByTime,
      '-inf',
      this.now() - this.retention.retentionMs,
      'WITHSCORES',
      'LIMIT',
      0,
      TRIM_BATCH,
    );
    const seqs = old.filter((_, i) => i % 2 === 0);
    if (seqs.length === 0) return 0;
    const raw = await this.redis.hmget(k.audit, ...seqs);
    const entries = seqs.flatMap((seq, i) => {
      const json = raw[i];
      return json === null || json === undefined ? [] : [{ seq: Number(seq), atMs: Number(old[2 * i + 1]), json }];
    });
    await this.retention.cold.put(tenantId, entries);
    // Dropped only where the archive now holds these very bytes: a seq it already had other bytes
    // for (a log begun again on an emptied Redis) is kept here, not lost to a refused copy.
    const archived = await this.retention.cold.get(
      tenantId,
      entries.map((e) => e.seq),
    );
    const held = new Set(entries.filter((e) => archived.get(e.seq) !== e.json).map((e) => String(e.seq)));
    if (held.size) this.logger?.error({ tenantId, seqs: [...held] }, 'the archive holds other entries under these seqs; kept in Redis');
    const moved = seqs.filter((seq) => !held.has(seq));
    if (moved.length === 0) return 0;
    await sendCommands(this.redis, [
      ['hdel', k.audit, ...moved],
      ['zrem', k.auditByTime, ...moved],
    ]);
    return entries.length - held.size;
  }

  private async appendOne(record: AuditRecord): Promise<AuditEntry> {
    const k = tenantKeys(record.tenantId);
    for (let i = 0; i < APPEND_ATTEMPTS; i++) {
      const head = await this.redis.get(k.auditHead);
      const [seq, prevHash, atMs] = head ? (head.split(' ') as [string, string, string]) : ['0', GENESIS_HASH, '0'];
      // Time never goes back along the chain, so seq order is time order (GET ?from= relies on it).
      const at = Math.max(this.now(), Number(atMs));
      const unhashed: Omit<AuditEntry, 'hash'> = { ...record, seq: Number(seq) + 1, at: new Date(at).toISOString(), prevHash };
      const entry = { ...unhashed, hash: auditHash(unhashed) } as AuditEntry;
      const json = JSON.stringify(entry);
      const appended = await this.scripts.appendAudit(
        { entries: k.audit, byTime: k.auditByTime, head: k.auditHead },
        { seq: entry.seq, prevHash, json, hash: entry.hash, atMs: at },
      );
      if (appended) return entry;
    }
    throw new Error(`the decision log of ${record.tenantId} kept moving: ${APPEND_ATTEMPTS} appends lost`);
  }

  /**
   * Up to `limit` entries, oldest first: after seq `cursor`, at or after `from`, up to `to`
   * (ms). An entry that no longer parses is returned as stored, for `verify` to name.
   */
  async page(tenantId: string, q: { from?: number; to?: number; cursor?: number; limit: number }) {
    const k = tenantKeys(tenantId);
    const head = await this.head(tenantId);
    let start = (q.cursor ?? 0) + 1;
    if (q.from !== undefined) {
      const [first] = await this.redis.zrangebyscore(k.auditByTime, q.from, '+inf', 'LIMIT', 0, 1);
      // Trimmed from Redis, the first entry since `from` may be in the archive.
      const cold = this.retention ? await this.retention.cold.firstSince(tenantId, q.from) : null;
      const found = [first ? Number(first) : null, cold].filter((n): n is number => n !== null);
      start = Math.max(start, found.length ? Math.min(...found) : Number.POSITIVE_INFINITY);
    }
    const count = Math.min(q.limit, head.seq - start + 1);
    if (!Number.isFinite(start) || count <= 0) return { entries: [] as AuditEntry[], head };
    const seqs = Array.from({ length: count }, (_, i) => String(start + i));
    const raw = await this.redis.hmget(k.audit, ...seqs);
    // What Redis no longer holds is read from the archive (an entry in neither stays a hole).
    const gone = seqs.filter((_, i) => raw[i] === null).map(Number);
    if (this.retention && gone.length) {
      const cold = await this.retention.cold.get(tenantId, gone);
      seqs.forEach((seq, i) => {
        raw[i] ??= cold.get(Number(seq)) ?? null;
      });
    }
    const entries: AuditEntry[] = [];
    let more = false;
    for (const [i, json] of raw.entries()) {
      // Below the head nothing may be missing: a hole shows, as an entry that cannot verify.
      const entry = parseEntry(tenantId, start + i, json);
      if (q.to !== undefined && Date.parse(entry.at) > q.to) break;
      entries.push(entry);
      more = entries.length === count && entry.seq < head.seq;
    }
    const last = entries.at(-1);
    return { entries, head, ...(more && last ? { nextCursor: String(last.seq) } : {}) };
  }

  /**
   * Copies the tenant's head out of Redis when it moved on since the last copy: signed when
   * the fleet has an audit key, to the archive and to the checkpoint sink. A log that no
   * longer holds the archive's last checkpoint (entries removed and the head rewound, maybe
   * appended to since) is `behind`: nothing is written, so the checkpoint keeps the truth.
   * The sink is written on its own: one that is down leaves the archive's copy standing and
   * is reported as `sinkBehind` for the pass to count (decisions never wait on a checkpoint).
   */
  async checkpoint(tenantId: string): Promise<{ outcome: CheckpointOutcome; sinkBehind?: string }> {
    const cold = this.retention?.cold;
    const sink = this.proof?.sink;
    if (!cold && !sink) return { outcome: 'unchanged' };
    const [head, last] = await Promise.all([this.head(tenantId), cold ? cold.latestCheckpoint(tenantId) : null]);
    if (last && !(await this.holds(tenantId, head, last))) return { outcome: 'behind' };
    if (head.seq === 0) return { outcome: 'unchanged' };
    const at = new Date(this.now()).toISOString();
    const signed = this.proof ? this.proof.signer.checkpoint({ tenantId, ...head, at }) : undefined;
    let outcome: CheckpointOutcome = 'unchanged';
    if (cold && head.seq !== last?.seq) {
      await cold.putCheckpoint(tenantId, signed ?? { ...head, at });
      outcome = 'written';
    }
    if (sink && signed) {
      const sunk = await this.redis.hget(AUDIT_SUNK_KEY, tenantId);
      if (sunk !== `${head.seq} ${head.hash}`) {
        try {
          await sink.write(signed);
        } catch (err) {
          return { outcome, sinkBehind: `the checkpoint sink ${sink.name} did not take the head: ${(err as Error).message}` };
        }
        await this.redis.hset(AUDIT_SUNK_KEY, tenantId, `${head.seq} ${head.hash}`);
        outcome = 'written';
      }
    }
    return { outcome };
  }

  /**
   * One checkpoint pass over every tenant with a log (named in Redis, or checkpointed before).
   * Returns how many heads were written, the tenants behind their archived checkpoint, and
   * those whose head the sink did not take.
   */
  async checkpointAll(): Promise<{ written: number; behind: string[]; sinkBehind: string[] }> {
    const cold = this.retention?.cold;
    if (!cold && !this.proof?.sink) return { written: 0, behind: [], sinkBehind: [] };
    // The archive's own list too: a tenant removed from Redis's set is still checked.
    const [named, checkpointed] = await Promise.all([this.redis.smembers(AUDIT_TENANTS_KEY), cold ? cold.checkpointedTenants() : []]);
    let written = 0;
    const behind: string[] = [];
    const sinkBehind: string[] = [];
    for (const tenantId of new Set([...named, ...checkpointed])) {
      const { outcome, sinkBehind: why } = await this.checkpoint(tenantId).catch((err: Error) => {
        this.logger?.warn({ err: err.message, tenantId }, 'could not checkpoint the decision log');
        return { outcome: 'unchanged' as const, sinkBehind: undefined };
      });
      if (why) {
        sinkBehind.push(tenantId);
        this.logger?.warn({ err: why, tenantId }, 'could not checkpoint the decision log');
      }
      if (outcome === 'written') written++;
      if (outcome === 'behind') behind.push(tenantId);
    }
    for (const tenantId of behind)
      this.logger?.error({ tenantId }, 'the decision log no longer holds its last checkpoint: entries were removed and its head rewound');
    return { written, behind, sinkBehind };
  }

  /** The archive's latest checkpoint of the tenant's head (null: none, or no archive). */
  async latestCheckpoint(tenantId: string): Promise<AuditCheckpoint | null> {
    return this.retention ? this.retention.cold.latestCheckpoint(tenantId) : null;
  }

  /** Whether the log, at `head`, still holds the checkpointed entry: reaches its seq, with that very hash there. */
  private async holds(tenantId: string, head: { seq: number; hash: string }, kept: AuditCheckpoint): Promise<boolean> {
    if (head.seq < kept.seq) return false;
    if (head.seq === kept.seq) return head.hash === kept.hash;
    const [entry] = (await this.page(tenantId, { cursor: kept.seq - 1, limit: 1 })).entries;
    return entry?.seq === kept.seq && entry.hash === kept.hash;
  }

  /** The chain's last entry (`seq` 0 and the genesis hash for an empty log). */
  async head(tenantId: string): Promise<{ seq: number; hash: string }> {
    const head = await this.redis.get(tenantKeys(tenantId).auditHead);
    if (!head) return { seq: 0, hash: GENESIS_HASH };
    const [seq, hash] = head.split(' ');
    return { seq: Number(seq), hash: hash ?? '' };
  }
}

/**
 * A stored entry exactly as stored (extra fields included: they are hashed too). One altered
 * into something that is not an entry still shows, with what was stored, so `verify` names it.
 */
function parseEntry(tenantId: string, seq: number, json: string | null): AuditEntry {
  let value: unknown;
  try {
    value = json === null ? undefined : JSON.parse(json);
  } catch {
    value = undefined;
  }
  if (auditEntrySchema.safeParse(value).success) return value as AuditEntry;
  return {
    seq,
    at: '',
    tenantId,
    actor: '',
    action: 'approval.requested',
    subject: {},
    data: json === null ? { missing: true } : { unparseable: json },
    prevHash: GENESIS_HASH,
    hash: GENESIS_HASH,
  };
}
