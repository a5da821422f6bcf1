import type { ItemStore, StoredItem, StoreScope } from '../../policy/store/store-items.js';
import { searchableText } from '../../policy/store/store-items.js';
import { ArchiveUnavailableError } from '../../shared/errors.js';
import { type ArchivePool, guardedQueries, isArchiveUnavailable } from './archive-pool.js';

interface Row {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  ttl_minutes: number | null;
  expires_at: Date | null;
}

const itemOf = (r: Row): StoredItem => ({
  namespace: r.namespace,
  key: r.key,
  value: r.value,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  ...(r.ttl_minutes !== null ? { ttlMinutes: r.ttl_minutes } : {}),
  ...(r.expires_at !== null ? { expiresAt: r.expires_at.getTime() } : {}),
});

const COLUMNS = 'namespace, key, value, created_at, updated_at, ttl_minutes, expires_at';
/** LIKE's own characters in a query word, escaped. */
const likeWord = (w: string) => `%${w.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The store in PostgreSQL (the archive configured: `rein.store_items`, migration 0007). A
 * put counts the tenant's items and writes in one transaction under a per-tenant advisory
 * lock, so concurrent puts cannot pass the limit together; a text query narrows the listing
 * through the trigram index.
 */
export class PgItemStore implements ItemStore {
  private readonly queries;

  constructor(private readonly pool: ArchivePool) {
    this.queries = guardedQueries(pool);
  }

  async put(tenantId: string, scope: StoreScope, item: StoredItem, maxItems: number): Promise<boolean> {
    const client = await this.pool.connect().catch((err: unknown) => {
      throw isArchiveUnavailable(err) ? new ArchiveUnavailableError(err) : err;
    });
    try {
      await client.query('BEGIN');
      await client.query("SELECT pg_advisory_xact_lock(hashtext('rein.store:' || $1))", [tenantId]);
      const { rows } = await client.query<{ held: boolean; count: string }>(
        `SELECT EXISTS (SELECT 1 FROM rein.store_items WHERE tenant_id = $1 AND scope = $2 AND namespace = $3 AND key = $4) AS held,
                (SELECT count(*) FROM rein.store_items WHERE tenant_id = $1) AS count`,
        [tenantId, scope, item.namespace, item.key],
      );
      const row = rows[0] as { held: boolean; count: string };
      if (!row.held && Number(row.count) >= maxItems) {
        await client.query('ROLLBACK');
        return false;
      }
      await client.query(
        `INSERT INTO rein.store_items (tenant_id, scope, namespace, key, value, value_text, created_at, updated_at, ttl_minutes, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (tenant_id, scope, namespace, key) DO UPDATE SET
           value = EXCLUDED.value, value_text = EXCLUDED.value_text, updated_at = EXCLUDED.updated_at,
           ttl_minutes = EXCLUDED.ttl_minutes, expires_at = EXCLUDED.expires_at`,
        [
          tenantId,
          scope,
          item.namespace,
          item.key,
          JSON.stringify(item.value),
          searchableText(item.value),
          item.createdAt,
          item.updatedAt,
          item.ttlMinutes ?? null,
          item.expiresAt !== undefined ? new Date(item.expiresAt).toISOString() : null,
        ],
      );
      await client.query('COMMIT');
      return true;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw isArchiveUnavailable(err) ? new ArchiveUnavailableError(err) : err;
    } finally {
      client.release();
    }
  }

  async get(tenantId: string, scope: StoreScope, namespace: readonly string[], key: string): Promise<StoredItem | null> {
    const { rows } = await this.queries.query<Row>(
      `SELECT ${COLUMNS} FROM rein.store_items WHERE tenant_id = $1 AND scope = $2 AND namespace = $3 AND key = $4`,
      [tenantId, scope, [...namespace], key],
    );
    return rows[0] ? itemOf(rows[0]) : null;
  }

  async touch(tenantId: string, scope: StoreScope, read: StoredItem, expiresAt: number): Promise<void> {
    await this.queries.query(
      `UPDATE rein.store_items SET expires_at = $6
        WHERE tenant_id = $1 AND scope = $2 AND namespace = $3 AND key = $4 AND updated_at = $5`,
      [tenantId, scope, [...read.namespace], read.key, read.updatedAt, new Date(expiresAt).toISOString()],
    );
  }

  async delete(tenantId: string, scope: StoreScope, namespace: readonly string[], key: string): Promise<void> {
    await this.queries.query('DELETE FROM rein.store_items WHERE tenant_id = $1 AND scope = $2 AND namespace = $3 AND key = $4', [
      tenantId,
      scope,
      [...namespace],
      key,
    ]);
  }

  async list(tenantId: string, scope: StoreScope, prefix: readonly string[], query?: string): Promise<StoredItem[]> {
    const words = (query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
    const params: unknown[] = [tenantId, scope, [...prefix], prefix.length];
    const textClauses = words.map((w) => {
      params.push(likeWord(w));
      return `AND value_text LIKE $${params.length}`;
    });
    // A `*` label in the prefix matches any label at its place.
    const { rows } = await this.queries.query<Row>(
      `SELECT ${COLUMNS} FROM rein.store_items
       WHERE tenant_id = $1 AND scope = $2
         AND NOT EXISTS (SELECT 1 FROM generate_subscripts($3::text[], 1) AS i
                         WHERE ($3::text[])[i] <> '*' AND ($3::text[])[i] IS DISTINCT FROM namespace[i])
         AND cardinality(namespace) >= $4 ${textClauses.join(' ')}`,
      params,
    );
    return rows.map(itemOf);
  }
}
