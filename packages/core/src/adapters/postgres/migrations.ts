import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from 'pg';
import { ReinError } from '../../shared/errors.js';

/**
 * The archive's schema migrations: plain SQL files `migrations/NNNN_name.sql`, applied
 * in order, each in its own transaction, and recorded in `rein.schema_migrations`
 * (version, name, checksum). `migrateArchive` holds a PostgreSQL advisory lock while it
 * runs, so several processes starting at once apply each migration once: the others
 * wait on the lock, then find nothing left to do. A migration is never edited once
 * released (its checksum is checked); a change is a new file.
 */

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

/** Why the archive's schema does not fit this build; `code` is stable. */
export class ArchiveSchemaError extends ReinError {
  override readonly name = 'ArchiveSchemaError';
  constructor(
    code: 'archive_schema_missing' | 'archive_schema_behind' | 'archive_schema_ahead' | 'archive_migration_changed',
    message: string,
  ) {
    super(code, message);
  }
}

/** Any fixed 64-bit number: the advisory lock every migrating process queues on. */
const MIGRATION_LOCK = 2_702_027_027;

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

/** The migrations this build ships, oldest first; versions must run 1, 2, 3, … without a gap. */
export function loadMigrations(dir: URL = MIGRATIONS_DIR): Migration[] {
  const migrations = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((file) => {
      const match = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
      if (!match) throw new Error(`archive migration ${file}: name it NNNN_name.sql`);
      const sql = readFileSync(new URL(file, dir), 'utf8');
      return { version: Number(match[1]), name: match[2] ?? '', sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`archive migration ${m.version}_${m.name}: expected version ${i + 1}`);
  });
  return migrations;
}

interface AppliedRow {
  version: number;
  checksum: string;
}

/** What the database has applied, or null if it was never migrated. */
async function appliedVersions(pool: Pick<Pool, 'query'>): Promise<AppliedRow[] | null> {
  const exists = await pool.query<{ t: string | null }>("SELECT to_regclass('rein.schema_migrations')::text AS t");
  if (!exists.rows[0]?.t) return null;
  const { rows } = await pool.query<AppliedRow>('SELECT version, checksum FROM rein.schema_migrations ORDER BY version');
  return rows;
}

/** Fails if the database has versions this build does not know, or an applied migration's file changed. */
function compare(applied: AppliedRow[], known: Migration[]): void {
  const latest = known.length;
  const ahead = applied.filter((a) => a.version > latest);
  if (ahead.length) {
    throw new ArchiveSchemaError(
      'archive_schema_ahead',
      `the archive's schema is at version ${applied.at(-1)?.version}, this build knows up to ${latest}: a newer Rein migrated it (upgrade this service)`,
    );
  }
  for (const a of applied) {
    const file = known[a.version - 1];
    if (file && file.checksum !== a.checksum)
      throw new ArchiveSchemaError(
        'archive_migration_changed',
        `archive migration ${a.version}_${file.name} differs from the one applied: released migrations are never edited`,
      );
  }
}

/**
 * Applies the migrations not yet applied, under the advisory lock; returns the versions
 * it applied (none when another process got there first). The lock is a session lock
 * on one pooled connection, released (or dropped with the connection) at the end.
 */
export async function migrateArchive(pool: Pool, migrations: Migration[] = loadMigrations()): Promise<number[]> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      `CREATE SCHEMA IF NOT EXISTS rein;
       CREATE TABLE IF NOT EXISTS rein.schema_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         checksum text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const applied = (await appliedVersions(client)) ?? [];
    compare(applied, migrations);
    const done = new Set(applied.map((a) => a.version));
    const ran: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      try {
        await client.query('BEGIN');
        await client.query(m.sql);
        await client.query('INSERT INTO rein.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          m.checksum,
        ]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
      ran.push(m.version);
    }
    return ran;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
}

/**
 * The check every service makes at start: the database's schema is exactly this build's.
 * Throws ArchiveSchemaError saying what is wrong — never migrated, behind (run
 * `rein migrate`), ahead (a newer Rein migrated it), or an applied migration changed.
 */
export async function checkArchiveSchema(pool: Pick<Pool, 'query'>, migrations: Migration[] = loadMigrations()): Promise<void> {
  const applied = await appliedVersions(pool);
  if (!applied?.length)
    throw new ArchiveSchemaError('archive_schema_missing', 'the archive database has no Rein schema: run `rein migrate` first');
  compare(applied, migrations);
  const at = applied.at(-1)?.version ?? 0;
  if (at < migrations.length)
    throw new ArchiveSchemaError(
      'archive_schema_behind',
      `the archive's schema is at version ${at}, this build needs ${migrations.length}: run \`rein migrate\``,
    );
}
