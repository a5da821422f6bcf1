import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { type ArchivePool, createArchivePool } from '../src/adapters/postgres/archive-pool.js';
import {
  ArchiveSchemaError,
  checkArchiveSchema,
  loadMigrations,
  type Migration,
  migrateArchive,
} from '../src/adapters/postgres/migrations.js';
import { startTestPostgres } from '../src/testing/postgres-server.js';

const db = await startTestPostgres('archive migrations');

describe.skipIf(!db)('archive schema migrations (real PostgreSQL)', () => {
  const pools: ArchivePool[] = [];
  const pool = () => {
    const p = createArchivePool(db!.url);
    pools.push(p);
    return p;
  };
  const admin = () => pools[0] ?? pool();

  beforeEach(async () => {
    await admin().query('DROP SCHEMA IF EXISTS rein CASCADE');
  });

  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await db?.stop();
  });

  const code = (p: Promise<unknown>) =>
    p.then(
      () => 'resolved',
      (err: unknown) => (err instanceof ArchiveSchemaError ? err.code : String(err)),
    );

  it('applied from three processes at once, each migration runs exactly once', async () => {
    const known = loadMigrations();
    const runs = await Promise.all([pool(), pool(), pool()].map((p) => migrateArchive(p)));
    expect(runs.flat().sort()).toEqual(known.map((m) => m.version));
    const { rows } = await admin().query('SELECT version, name FROM rein.schema_migrations ORDER BY version');
    expect(rows).toEqual(known.map((m) => ({ version: m.version, name: m.name })));
    expect(await migrateArchive(pool())).toEqual([]);
    await expect(checkArchiveSchema(admin())).resolves.toBeUndefined();
  });

  it('the start check names what is wrong: missing, behind, ahead, a released migration edited', async () => {
    const known = loadMigrations();
    expect(await code(checkArchiveSchema(admin()))).toBe('archive_schema_missing');

    const next: Migration = { version: known.length + 1, name: 'next', sql: 'CREATE TABLE rein.later (id int)', checksum: 'c'.repeat(64) };
    await migrateArchive(admin());
    // This build is behind a database that a newer build (one more migration) migrated.
    await migrateArchive(admin(), [...known, next]);
    expect(await code(checkArchiveSchema(admin(), known))).toBe('archive_schema_ahead');
    expect(await code(migrateArchive(admin(), known))).toBe('archive_schema_ahead');

    // A newer build meets a database still at this build's version.
    await admin().query('DELETE FROM rein.schema_migrations WHERE version = $1', [next.version]);
    await admin().query('DROP TABLE rein.later');
    expect(await code(checkArchiveSchema(admin(), [...known, next]))).toBe('archive_schema_behind');

    const edited = known.map((m, i) => (i === 0 ? { ...m, checksum: 'e'.repeat(64) } : m));
    expect(await code(checkArchiveSchema(admin(), edited))).toBe('archive_migration_changed');
  });

  it('a failing migration leaves nothing half-applied and is not recorded', async () => {
    const known = loadMigrations();
    const broken: Migration = {
      version: known.length + 1,
      name: 'broken',
      sql: 'CREATE TABLE rein.half (id int); SELECT 1/0',
      checksum: 'b'.repeat(64),
    };
    await expect(migrateArchive(admin(), [...known, broken])).rejects.toThrow(/division by zero/);
    const { rows } = await admin().query("SELECT max(version) AS v, to_regclass('rein.half')::text AS half FROM rein.schema_migrations");
    expect(rows[0]).toEqual({ v: known.length, half: null });
    await expect(checkArchiveSchema(admin(), known)).resolves.toBeUndefined();
  });
});
