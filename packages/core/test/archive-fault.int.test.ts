import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ArchivePool, createArchivePool } from '../src/adapters/postgres/archive-pool.js';
import { checkArchiveSchema, migrateArchive } from '../src/adapters/postgres/migrations.js';
import { RunArchive } from '../src/adapters/postgres/run-archive.js';
import { hasPostgresBinaries, LocalPostgres } from '../src/testing/postgres-server.js';
import { archiveDoc } from './archive-fixture.js';

describe.skipIf(!hasPostgresBinaries('archive faults'))('the archive when its PostgreSQL is killed (a server of its own)', () => {
  let server: LocalPostgres;
  let pool: ArchivePool;
  const idleErrors: Error[] = [];

  beforeAll(async () => {
    server = await LocalPostgres.start();
    pool = createArchivePool(server.url, { connectTimeoutMs: 2_000, onError: (err) => idleErrors.push(err) });
    await migrateArchive(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });

  it('writes fail while it is down, the process lives on, and after the restart nothing committed is lost', async () => {
    const archive = new RunArchive(pool);
    const before = archiveDoc({ id: randomUUID() });
    expect(await archive.archiveRun(before)).toBe(true);

    await server.kill();
    // The pooled connection died: reported, not thrown. Awaited before the next write, which
    // would otherwise take that connection out of the pool first and see the error itself.
    await expect.poll(() => idleErrors.length).toBeGreaterThan(0);
    const during = archiveDoc({ id: randomUUID() });
    await expect(archive.archiveRun(during)).rejects.toThrow();

    await server.start();
    await checkArchiveSchema(pool);
    expect(await archive.readRun('acme', before.run.id)).toMatchObject({ run: before.run });
    // The retry (what the archive job's retry or the reaper does) writes it now, once.
    expect(await archive.archiveRun(during)).toBe(true);
    expect(await archive.archiveRun(during)).toBe(false);
  });
});
