import type { Pool } from 'pg';
import type { AuditCheckpoint, AuditColdStore, StoredAuditEntry } from '../redis/audit-log.js';

/**
 * The decision log's entries beyond Redis's hot retention, in PostgreSQL (`rein.audit`,
 * migration 0002): written before Redis lets them go, read where Redis has none.
 */
export class AuditArchive implements AuditColdStore {
  constructor(private readonly pool: Pick<Pool, 'query'>) {}

  /** Idempotent: an entry copied twice (a trim retried) is kept once, as first copied. */
  async put(tenantId: string, entries: readonly StoredAuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.pool.query(
      `INSERT INTO rein.audit (tenant_id, seq, at, entry)
       SELECT $1, * FROM unnest($2::bigint[], $3::timestamptz[], $4::text[])
       ON CONFLICT (tenant_id, seq) DO NOTHING`,
      [tenantId, entries.map((e) => e.seq), entries.map((e) => new Date(e.atMs).toISOString()), entries.map((e) => e.json)],
    );
  }

  async get(tenantId: string, seqs: readonly number[]): Promise<Map<number, string>> {
    if (seqs.length === 0) return new Map();
    const { rows } = await this.pool.query<{ seq: string; entry: string }>(
      'SELECT seq, entry FROM rein.audit WHERE tenant_id = $1 AND seq = ANY($2::bigint[])',
      [tenantId, [...seqs]],
    );
    return new Map(rows.map((r) => [Number(r.seq), r.entry]));
  }

  async firstSince(tenantId: string, fromMs: number): Promise<number | null> {
    const { rows } = await this.pool.query<{ seq: string | null }>(
      'SELECT min(seq) AS seq FROM rein.audit WHERE tenant_id = $1 AND at >= $2',
      [tenantId, new Date(fromMs).toISOString()],
    );
    return rows[0]?.seq ? Number(rows[0].seq) : null;
  }

  /** Idempotent: a head checkpointed twice (one pass per housekeeping shard) is kept once. */
  async putCheckpoint(tenantId: string, checkpoint: AuditCheckpoint): Promise<void> {
    await this.pool.query(
      `INSERT INTO rein.audit_checkpoints (tenant_id, seq, hash, at, key_id, signature) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (tenant_id, seq) DO NOTHING`,
      [tenantId, checkpoint.seq, checkpoint.hash, checkpoint.at, checkpoint.keyId ?? null, checkpoint.signature ?? null],
    );
  }

  async latestCheckpoint(tenantId: string): Promise<AuditCheckpoint | null> {
    const { rows } = await this.pool.query<{ seq: string; hash: string; at: Date; key_id: string | null; signature: string | null }>(
      'SELECT seq, hash, at, key_id, signature FROM rein.audit_checkpoints WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1',
      [tenantId],
    );
    const row = rows[0];
    if (!row) return null;
    const signed = row.key_id && row.signature ? { keyId: row.key_id, signature: row.signature } : {};
    return { seq: Number(row.seq), hash: row.hash, at: row.at.toISOString(), ...signed };
  }

  async checkpointedTenants(): Promise<string[]> {
    const { rows } = await this.pool.query<{ tenant_id: string }>('SELECT DISTINCT tenant_id FROM rein.audit_checkpoints');
    return rows.map((r) => r.tenant_id);
  }
}
