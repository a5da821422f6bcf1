import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startTestPostgres, startTestRedis, type TestRedis, waitForPort } from '@rein/core/testing';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, REIN, runRein, stopProcess } from './rein-process.js';

const ADMIN = { key: 'receipts-admin-key-01', tenantId: 'acme', userId: 'ann', roles: ['admin'] };
const db = await startTestPostgres('decision receipts');

const ed25519 = () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
};

/**
 * Receipts and signed checkpoints, end to end: an API and a worker as processes, with an
 * audit key, the archive and a checkpoint file; every check after the decisions is `rein`
 * run offline against files — as an auditor would, with no access to the fleet.
 */
describe.skipIf(!db)('decision receipts and checkpoints verified offline', () => {
  let redis: TestRedis;
  let pool: pg.Pool;
  const services: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'rein-receipts-'));
  const sink = join(dir, 'checkpoints.jsonl');
  const first = ed25519();
  let fleet: Record<string, string>;
  let api: string;
  let apiPort: number;

  const start = (service: 'api' | 'worker', env: Record<string, string>) => {
    const child = spawn(process.execPath, [REIN, service], { env: { ...process.env, ...env }, stdio: 'ignore' });
    services.push(child);
    return child;
  };
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${api}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  const createHook = async (n: number) => {
    const res = await call('POST', '/v1/webhooks', { url: `http://127.0.0.1:9/h${n}`, events: ['approval.requested'] });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; receipt: { seq: number; keyId: string } };
  };
  const file = (name: string, value: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  };
  const sunk = () =>
    readFileSync(sink, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { seq: number; hash: string; tenantId: string });

  beforeAll(async () => {
    redis = await startTestRedis();
    pool = new pg.Pool({ connectionString: db!.url });
    apiPort = await freePort();
    api = `http://127.0.0.1:${apiPort}`;
    fleet = {
      REDIS_URL: redis.url,
      REIN_ARCHIVE_URL: db!.url,
      REIN_API_KEYS: JSON.stringify([ADMIN]),
      API_PORT: String(apiPort),
      WORKER_METRICS_PORT: String(await freePort()),
      REIN_AUDIT_SIGNING_KEY: first.privatePem,
      REIN_AUDIT_CHECKPOINT_SINK: sink,
      REIN_AUDIT_CHECKPOINT_INTERVAL_MS: '1000',
      REIN_WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'silent',
    };
    expect((await runRein(['migrate'], fleet)).status).toBe(0);
    start('api', fleet);
    start('worker', fleet);
    await waitForPort(apiPort, 30_000);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(services.map(stopProcess));
    await pool?.end();
    await redis?.stop();
    await db?.stop();
  });

  it('a decision answers a receipt that verifies offline, and refuses an altered, forged or moved one', async () => {
    const created = await createHook(1);
    expect(created.receipt).toMatchObject({ seq: 1, entry: { action: 'webhook.created', actor: 'ann' } });
    // A decision with no body (204) carries its receipt in a header.
    const removed = await call('DELETE', `/v1/webhooks/${created.id}`);
    expect(removed.status).toBe(204);
    const fromHeader = JSON.parse(Buffer.from(removed.headers.get('rein-receipt') ?? '', 'base64url').toString()) as { seq: number };
    expect(fromHeader).toMatchObject({ seq: 2, entry: { action: 'webhook.deleted' } });

    const keys = file('keys.json', await (await call('GET', '/v1/audit/keys')).json());
    const whole = file('answer.json', created); // the decision's whole answer is taken too
    const good = await runRein(['audit', 'verify', '--receipt', whole, '--public-key', keys]);
    expect(good.stdout).toMatch(/^ok: entry 1 of acme's decision log \(webhook\.created by ann/);
    expect(good.status).toBe(0);
    expect((await runRein(['audit', 'verify', '--receipt', file('h.json', fromHeader), '--public-key', keys])).status).toBe(0);

    const receipt = created.receipt as unknown as { entry: Record<string, unknown>; signature: string; seq: number };
    const altered = await runRein([
      'audit',
      'verify',
      '--receipt',
      file('a.json', { ...receipt, entry: { ...receipt.entry, actor: 'eve' } }),
      '--public-key',
      keys,
    ]);
    expect(altered.status).toBe(1);
    expect(altered.stderr).toMatch(/altered/);
    const forged = { ...receipt, signature: Buffer.alloc(64, 7).toString('base64url') };
    expect((await runRein(['audit', 'verify', '--receipt', file('f.json', forged), '--public-key', keys])).stderr).toMatch(
      /does not verify/,
    );
    // Entry 2's receipt with entry 1's signature: moved to another seq, refused.
    const moved = { ...fromHeader, signature: receipt.signature };
    expect((await runRein(['audit', 'verify', '--receipt', file('m.json', moved), '--public-key', keys])).status).toBe(1);
    expect((await runRein(['audit', 'verify', '--receipt', file('x.json', '{"nope":1}'), '--public-key', keys])).stderr).toMatch(
      /is not a receipt/,
    );
  }, 60_000);

  it('an exported log verifies against the external checkpoint; rewritten in Redis and PostgreSQL together, it does not', async () => {
    await createHook(2); // entry 3
    const kept = await eventually(async () => {
      try {
        return sunk().find((c) => c.tenantId === 'acme' && c.seq === 3);
      } catch {
        return undefined;
      }
    });
    const env = { REIN_API_URL: api, REIN_API_KEY: ADMIN.key };
    const keys = file('keys.json', await (await call('GET', '/v1/audit/keys')).json());
    const checkpoint = file('checkpoint.json', kept);
    const exported = join(dir, 'export.jsonl');
    expect((await runRein(['audit', 'export', '--out', exported], env)).status).toBe(0);
    const ok = await runRein(['audit', 'verify', '--log', exported, '--checkpoint', checkpoint, '--public-key', keys]);
    expect(ok.stdout).toMatch(/^ok: 3 entries of acme, holding entry 3/);
    expect(ok.status).toBe(0);

    // An operator with both databases removes entry 3, rewinds the head, drops the archive's
    // checkpoints, and the log goes on: Rein's own checks have nothing left to compare with.
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
    await pool.query("DELETE FROM rein.audit_checkpoints WHERE tenant_id = 'acme'");
    await createHook(3); // a new entry 3
    expect((await runRein(['audit', 'verify'], env)).status).toBe(0);
    // The external copy still holds the old entry 3, and the new log does not.
    expect((await runRein(['audit', 'export', '--out', exported], env)).status).toBe(0);
    const caught = await runRein(['audit', 'verify', '--log', exported, '--checkpoint', checkpoint, '--public-key', keys]);
    expect(caught.status).toBe(1);
    expect(caught.stderr).toMatch(/entry 3 hashes to [0-9a-f]{64}, not [0-9a-f]{64} as the checkpoint .* says \(the log was rewritten\)/);
    // A forged checkpoint (another seq under the same signature) is refused before the log is read.
    const forged = await runRein([
      'audit',
      'verify',
      '--log',
      exported,
      '--checkpoint',
      file('c2.json', { ...kept, seq: 2 }),
      '--public-key',
      keys,
    ]);
    expect(forged.stderr).toMatch(/checkpoint refused/);
  }, 120_000);

  it('a key rotated mid-chain: new decisions signed with the new key, old receipts still verify with the retired one listed', async () => {
    const before = await createHook(4);
    const second = ed25519();
    const oldApi = services.shift();
    if (oldApi) await stopProcess(oldApi);
    start('api', { ...fleet, REIN_AUDIT_SIGNING_KEY: second.privatePem, REIN_AUDIT_RETIRED_KEYS: JSON.stringify([first.publicPem]) });
    await waitForPort(apiPort, 30_000);
    const after = await createHook(5);
    expect(after.receipt.keyId).not.toBe(before.receipt.keyId);
    const published = (await (await call('GET', '/v1/audit/keys')).json()) as { keys: { keyId: string; status: string }[] };
    expect(published.keys).toEqual([
      expect.objectContaining({ keyId: after.receipt.keyId, status: 'active' }),
      expect.objectContaining({ keyId: before.receipt.keyId, status: 'retired' }),
    ]);
    const keys = file('keys2.json', published);
    for (const r of [before, after])
      expect((await runRein(['audit', 'verify', '--receipt', file('r.json', r), '--public-key', keys])).status).toBe(0);
  }, 120_000);
});
