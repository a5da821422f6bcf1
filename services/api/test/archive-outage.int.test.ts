import { randomUUID } from 'node:crypto';
import { optionsFromEnv } from '@rein/core';
import { createArchivePool, createRuntime, migrateArchive, type Runtime } from '@rein/core/internal';
import { hasPostgresBinaries, LocalPostgres, startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

const ADMIN = { key: 'archive-outage-admin-key', tenantId: 'acme', userId: 'ada', roles: ['admin', 'approver'] };

/**
 * The archive's PostgreSQL stopped while the API runs: every route that reads the archive
 * answers 503 archive_unavailable, naming the archive, never the bare `unavailable` an
 * unknown fault gets, and never the database's address.
 */
describe.skipIf(!hasPostgresBinaries('the archive outage over HTTP'))('the API with its archive down', () => {
  let pg: LocalPostgres;
  let redis: TestRedis;
  let rt: Runtime;
  let app: FastifyInstance;

  beforeAll(async () => {
    pg = await LocalPostgres.start();
    redis = await startTestRedis();
    const pool = createArchivePool(pg.url);
    await migrateArchive(pool);
    await pool.end();
    rt = await createRuntime(
      optionsFromEnv({
        REDIS_URL: redis.url,
        REIN_ARCHIVE_URL: pg.url,
        REIN_API_KEYS: JSON.stringify([ADMIN]),
        LOG_LEVEL: 'silent',
      }),
      'api-archive-outage-test',
      'producer',
      orderApp,
    );
    app = createApiApp(rt);
    await app.ready();
    await pg.kill();
  });
  afterAll(async () => {
    await app?.close();
    await rt?.close();
    await redis?.stop();
    await pg?.stop();
  });

  it.each([
    ['a search', '/v1/runs?q=order'],
    ['usage', '/v1/usage?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z'],
    ['a run Redis no longer holds', `/v1/runs/${randomUUID()}`],
    ['the decision log from a date', '/v1/audit?from=2020-01-01T00:00:00Z'],
  ])('%s is 503 archive_unavailable, naming the archive', async (_what, url) => {
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ADMIN.key}` } });
    expect(res.statusCode, res.body).toBe(503);
    const { error } = res.json();
    expect(error.code).toBe('archive_unavailable');
    expect(error.message).toMatch(/run archive \(PostgreSQL, REIN_ARCHIVE_URL\)/);
    expect(error.message).not.toContain(new URL(pg.url).port);
  });
});
