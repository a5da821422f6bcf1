import { type ChildProcess, spawn } from 'node:child_process';
import { freePort, startTestRedis, type TestRedis, waitForPort } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REIN, runRein, stopProcess } from './rein-process.js';

const ADMIN = { key: 'audit-admin-key-0001', tenantId: 'acme', userId: 'ann', roles: ['admin'] };
const USER = { key: 'audit-user-key-00001', tenantId: 'acme', userId: 'alice', roles: ['approver'] };
const OTHER_ADMIN = { key: 'audit-other-admin-01', tenantId: 'globex', userId: 'gus', roles: ['admin'] };

let redis: TestRedis;
let api: ChildProcess;
let url: string;
beforeAll(async () => {
  redis = await startTestRedis();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  api = spawn(process.execPath, [REIN, 'api'], {
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      API_PORT: String(port),
      REIN_API_KEYS: JSON.stringify([ADMIN, USER, OTHER_ADMIN]),
      REIN_WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'silent',
    },
    stdio: 'ignore',
  });
  await waitForPort(port, 30_000);
}, 40_000);
afterAll(async () => {
  if (api) await stopProcess(api);
  await redis?.stop();
});

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

describe('rein audit verify against a running API (issue 31)', () => {
  it('verifies the chain, then names the entry altered in Redis', async () => {
    for (const n of [1, 2]) {
      const res = await call(ADMIN.key, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:9/hook${n}`, events: ['approval.requested'] });
      expect(res.status).toBe(201);
    }
    const [hook] = ((await (await call(ADMIN.key, 'GET', '/v1/webhooks')).json()) as { webhooks: Array<{ id: string }> }).webhooks;
    expect((await call(ADMIN.key, 'DELETE', `/v1/webhooks/${hook?.id}`)).status).toBe(204);

    const page = (await (await call(ADMIN.key, 'GET', '/v1/audit')).json()) as { entries: Array<{ seq: number; action: string }> };
    expect(page.entries.map((e) => e.action)).toEqual(['webhook.created', 'webhook.created', 'webhook.deleted']);
    // Admins only, and each tenant its own log.
    expect((await call(USER.key, 'GET', '/v1/audit')).status).toBe(403);
    expect(((await (await call(OTHER_ADMIN.key, 'GET', '/v1/audit')).json()) as { entries: unknown[] }).entries).toEqual([]);
    expect((await call(ADMIN.key, 'GET', '/v1/audit?cursor=abc')).status).toBe(400);
    expect((await call(ADMIN.key, 'GET', '/v1/audit?limit=100000')).status).toBe(400);

    const env = { REIN_API_URL: url, REIN_API_KEY: ADMIN.key };
    const good = await runRein(['audit', 'verify'], env);
    expect(good.stdout).toMatch(/^ok: 3 entries, head 3:[0-9a-f]{64}/);
    expect(good.status).toBe(0);

    const admin = new Redis(redis.url);
    try {
      const key = 'rein:tenant:{acme}:audit';
      const entry = JSON.parse((await admin.hget(key, '2')) ?? '{}');
      await admin.hset(key, '2', JSON.stringify({ ...entry, data: { ...entry.data, url: 'https://evil.example/hook' } }));
      const bad = await runRein(['audit', 'verify'], env);
      expect(bad.status).toBe(1);
      expect(bad.stderr).toContain('broken at entry 2');
      // An added field is kept, not dropped on the way, so it breaks the hash too.
      await admin.hset(key, '2', JSON.stringify({ ...entry, note: 'added' }));
      expect((await runRein(['audit', 'verify'], env)).stderr).toContain('broken at entry 2');
      // A removed entry.
      await admin.hset(key, '2', JSON.stringify(entry));
      expect((await runRein(['audit', 'verify'], env)).status).toBe(0);
      await admin.hdel(key, '1');
      expect((await runRein(['audit', 'verify'], env)).stderr).toContain('broken at entry 1');
    } finally {
      admin.disconnect();
    }
  }, 240_000);

  it('--expect-head: a log whose last entry was removed and head rewound verifies alone, not against the head kept', async () => {
    const env = { REIN_API_URL: url, REIN_API_KEY: OTHER_ADMIN.key };
    for (const n of [1, 2, 3]) {
      const res = await call(OTHER_ADMIN.key, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:9/g${n}`, events: ['approval.requested'] });
      expect(res.status).toBe(201);
    }
    const good = await runRein(['audit', 'verify'], env);
    const kept = /head (\d+:[0-9a-f]{64})/.exec(good.stdout)?.[1] ?? '';
    expect(kept).toMatch(/^3:/);
    expect((await runRein(['audit', 'verify', '--expect-head', kept], env)).status).toBe(0);

    const admin = new Redis(redis.url);
    try {
      const p = 'rein:tenant:{globex}:audit';
      const second = JSON.parse((await admin.hget(p, '2')) ?? '{}') as { hash: string; at: string };
      await admin.hdel(p, '3');
      await admin.zrem(`${p}:at`, '3');
      await admin.set(`${p}:head`, `2 ${second.hash} ${Date.parse(second.at)}`);
      // The chain alone still holds: this is what the head kept elsewhere is for.
      expect((await runRein(['audit', 'verify'], env)).status).toBe(0);
      const cut = await runRein(['audit', 'verify', '--expect-head', kept], env);
      expect(cut.status).toBe(1);
      expect(cut.stderr).toContain('the chain ends at entry 2, before entry 3');
      // Written again up to seq 3 and beyond: entry 3 is another one.
      for (const n of [4, 5])
        await call(OTHER_ADMIN.key, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:9/g${n}`, events: ['approval.requested'] });
      const rewritten = await runRein(['audit', 'verify', '--expect-head', kept], env);
      expect(rewritten.status).toBe(1);
      expect(rewritten.stderr).toContain('broken at entry 3: its hash is');
    } finally {
      admin.disconnect();
    }
    const malformed = await runRein(['audit', 'verify', '--expect-head', '3:abc'], env);
    expect(malformed.status).not.toBe(0);
    expect(malformed.stderr).toContain('<seq>:<hash>');
  }, 240_000);
});
