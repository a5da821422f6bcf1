import type { Pool } from 'pg';
import type { AuditColdStore, StoredAuditEntry } from '../store/audit-log.js';

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
}
