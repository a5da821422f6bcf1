import { type ChildProcess, spawn } from 'node:child_process';
import { freePort, startTestPostgres, startTestRedis, type TestRedis, waitForPort } from '@rein/core/testing';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, REIN, runRein, stopProcess } from './rein-process.js';

const ADMIN = { key: 'checkpoint-admin-key-1', tenantId: 'acme', userId: 'ann', roles: ['admin'] };
const db = await startTestPostgres('decision-log checkpoints');

describe.skipIf(!db)('decision-log head checkpoints: a worker writes them, verify and a metric use them', () => {
  let redis: TestRedis;
  let pool: pg.Pool;
  const services: ChildProcess[] = [];
  let env: Record<string, string>;
  let api: string;
  let metrics: string;

  beforeAll(async () => {
    redis = await startTestRedis();
    pool = new pg.Pool({ connectionString: db!.url });
    const [apiPort, metricsPort] = [await freePort(), await freePort()];
    api = `http://127.0.0.1:${apiPort}`;
    metrics = `http://127.0.0.1:${metricsPort}/metrics`;
    const fleet = {
      REDIS_URL: redis.url,
      REIN_ARCHIVE_URL: db!.url,
      REIN_API_KEYS: JSON.stringify([ADMIN]),
      API_PORT: String(apiPort),
      WORKER_METRICS_PORT: String(metricsPort),
      REIN_AUDIT_CHECKPOINT_INTERVAL_MS: '1000',
      REIN_WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'silent',
    };
    expect((await runRein(['migrate'], fleet)).status).toBe(0);
    for (const service of ['api', 'worker'])
      services.push(spawn(process.execPath, [REIN, service], { env: { ...process.env, ...fleet }, stdio: 'ignore' }));
    await Promise.all([waitForPort(apiPort, 30_000), waitForPort(metricsPort, 30_000)]);
    env = { REIN_API_URL: api, REIN_API_KEY: ADMIN.key };
  }, 60_000);
  afterAll(async () => {
    await Promise.all(services.map(stopProcess));
    await pool?.end();
    await redis?.stop();
    await db?.stop();
  });

  it('catches a removed last entry and a rewound head without a kept head being given', async () => {
    for (const n of [1, 2, 3]) {
      const res = await fetch(`${api}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:9/h${n}`, events: ['approval.requested'] }),
      });
      expect(res.status).toBe(201);
    }
    // The worker's housekeeping copies the head to PostgreSQL.
    const checkpoint = await eventually(async () => {
      const { rows } = await pool.query("SELECT seq::int AS seq, hash FROM rein.audit_checkpoints WHERE tenant_id = 'acme' AND seq = 3");
      return rows[0] as { seq: number; hash: string } | undefined;
    });
    const good = await runRein(['audit', 'verify'], env);
    expect(good.status).toBe(0);
    expect(good.stdout).toContain(`head 3:${checkpoint.hash}`);

    const admin = new Redis(redis.url);
    try {
      const p = 'rein:tenant:{acme}:audit';
      const second = JSON.parse((await admin.hget(p, '2')) ?? '{}') as { hash: string; at: string };
      await admin.hdel(p, '3');
      await admin.zrem(`${p}:at`, '3');
      await admin.set(`${p}:head`, `2 ${second.hash} ${Date.parse(second.at)}`);
    } finally {
      admin.disconnect();
    }
    const cut = await runRein(['audit', 'verify'], env);
    expect(cut.status).toBe(1);
    expect(cut.stderr).toContain("before entry 3 that the archive's checkpoint");
    // The next pass sees it too: the metric the alert watches rises, and the checkpoint stays.
    await eventually(async () => {
      const text = await (await fetch(metrics)).text();
      return /^rein_audit_logs_behind_checkpoint(\{[^}]*\})? 1$/m.test(text) ? true : undefined;
    });
    const { rows } = await pool.query("SELECT max(seq)::int AS seq FROM rein.audit_checkpoints WHERE tenant_id = 'acme'");
    expect(rows[0].seq).toBe(3);
  }, 120_000);
});
