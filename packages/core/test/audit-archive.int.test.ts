import { generateKeyPairSync } from 'node:crypto';
import type { AuditRecord, SignedCheckpoint } from '@rein/contract';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ArchivePool, createArchivePool } from '../src/adapters/postgres/archive-pool.js';
import { AuditArchive } from '../src/adapters/postgres/audit-archive.js';
import { migrateArchive } from '../src/adapters/postgres/migrations.js';
import { type AuditCheckpoint, AuditLog, type CheckpointSink } from '../src/adapters/redis/audit-log.js';
import { verifyAuditChain } from '../src/policy/audit/audit-chain.js';
import { createAuditSigner, verifyCheckpoint } from '../src/policy/audit/receipts.js';
import { tenantKeys } from '../src/shared/keys.js';
import { startTestRedis, type TestRedis } from '../src/testing/index.js';
import { startTestPostgres } from '../src/testing/postgres-server.js';

const db = await startTestPostgres('the decision log archive');

const HOUR = 3_600_000;
const record = (n: number): AuditRecord => ({
  tenantId: 'acme',
  actor: 'bob',
  action: 'approval.approved',
  subject: { runId: `run-${n}`, approvalId: `run-${n}.0.0` },
  data: { n },
});

describe.skipIf(!db)('the decision log beyond Redis (real PostgreSQL)', () => {
  let pool: ArchivePool;
  let server: TestRedis;
  let redis: Redis;
  let clock: number;
  let log: AuditLog;

  beforeAll(async () => {
    pool = createArchivePool(db!.url, { max: 4 });
    await migrateArchive(pool);
    server = await startTestRedis();
    redis = new Redis(server.url, { maxRetriesPerRequest: null });
  });
  beforeEach(async () => {
    await pool.query('TRUNCATE rein.audit, rein.audit_checkpoints');
    await redis.flushdb();
    clock = Date.parse('2026-12-01T00:00:00.000Z');
    log = new AuditLog(redis, undefined, () => clock, { cold: new AuditArchive(pool), retentionMs: HOUR });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
    await pool?.end();
    await db?.stop();
  });

  /** Five entries a minute apart, then one two hours later (whose append trims the five). */
  async function fillAndAge() {
    for (let n = 1; n <= 5; n++) {
      await log.append([record(n)]);
      clock += 60_000;
    }
    clock += 2 * HOUR;
    await log.append([record(6)]);
  }

  it('moves entries past the retention to PostgreSQL, then drops them from Redis; reads and verify span both', async () => {
    await fillAndAge();
    expect(await redis.hkeys(tenantKeys('acme').audit)).toEqual(['6']);
    const { rows } = await pool.query('SELECT seq::int FROM rein.audit ORDER BY seq');
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    const { entries, head } = await log.page('acme', { limit: 100 });
    expect(entries.map((e) => [e.seq, e.data?.n])).toEqual([1, 2, 3, 4, 5, 6].map((n) => [n, n]));
    expect(verifyAuditChain(entries)).toEqual({ ok: true, entries: 6, head: head.hash });
    // Paged by cursor and by time the same way.
    expect((await log.page('acme', { limit: 2, cursor: 2 })).entries.map((e) => e.seq)).toEqual([3, 4]);
    const since = Date.parse('2026-12-01T00:02:00.000Z');
    expect((await log.page('acme', { limit: 100, from: since })).entries.map((e) => e.seq)).toEqual([3, 4, 5, 6]);
  });

  it('names an entry altered in PostgreSQL, as one altered in Redis', async () => {
    await fillAndAge();
    const { rows } = await pool.query("SELECT entry FROM rein.audit WHERE tenant_id = 'acme' AND seq = 3");
    const forged = { ...JSON.parse(rows[0].entry), actor: 'mallory' };
    await pool.query("UPDATE rein.audit SET entry = $1 WHERE tenant_id = 'acme' AND seq = 3", [JSON.stringify(forged)]);
    expect(verifyAuditChain((await log.page('acme', { limit: 100 })).entries)).toMatchObject({ ok: false, seq: 3 });
  });

  it('copied twice (a trim retried after a crash before the Redis delete), an entry is kept once, as first copied', async () => {
    await fillAndAge();
    const archive = new AuditArchive(pool);
    await archive.put('acme', [{ seq: 2, atMs: clock, json: '{"forged":true}' }]);
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM rein.audit WHERE tenant_id = 'acme'");
    expect(rows[0].n).toBe(5);
    expect(verifyAuditChain((await log.page('acme', { limit: 100 })).entries)).toMatchObject({ ok: true, entries: 6 });
  });

  it('never drops from Redis an entry PostgreSQL holds other bytes for (a log begun again on an emptied Redis)', async () => {
    await fillAndAge();
    // Redis emptied, the archive kept: the chain starts again at seq 1, which the archive already holds.
    await redis.flushdb();
    await log.append([record(7)]);
    clock += 2 * HOUR;
    await log.append([record(8)]);
    // Its copy was refused (the archive keeps its own seq 1): Redis still has the new entry, not lost.
    expect(JSON.parse((await redis.hget(tenantKeys('acme').audit, '1')) ?? '{}')).toMatchObject({ seq: 1, data: { n: 7 } });
    const { rows } = await pool.query("SELECT entry FROM rein.audit WHERE tenant_id = 'acme' AND seq = 1");
    expect(JSON.parse(rows[0].entry)).toMatchObject({ data: { n: 1 } });
  });

  it('checkpoints the head outside Redis; a log whose last entry was removed and head rewound no longer holds it', async () => {
    for (let n = 1; n <= 3; n++) await log.append([record(n)]);
    const head = await log.head('acme');
    expect(await log.checkpointAll()).toEqual({ written: 1, behind: [], sinkBehind: [] });
    expect(await log.checkpointAll()).toEqual({ written: 0, behind: [], sinkBehind: [] });
    expect(await log.latestCheckpoint('acme')).toMatchObject({ seq: 3, hash: head.hash });

    // The attack: the last entry deleted and the head rewound to the one before. The chain verifies on its own…
    const k = tenantKeys('acme');
    const [seq2, hash2, at2] = [2, (await log.page('acme', { limit: 100 })).entries[1]?.hash, clock];
    await redis.hdel(k.audit, '3');
    await redis.zrem(k.auditByTime, '3');
    await redis.set(k.auditHead, `${seq2} ${hash2} ${at2}`);
    const truncated = await log.page('acme', { limit: 100 });
    expect(verifyAuditChain(truncated.entries)).toMatchObject({ ok: true, entries: 2 });
    // …but not against the checkpoint: the pass reports it behind and does not move the checkpoint back.
    expect(await log.checkpointAll()).toEqual({ written: 0, behind: ['acme'], sinkBehind: [] });
    expect(await log.latestCheckpoint('acme')).toMatchObject({ seq: 3, hash: head.hash });

    // Appended to since, the log reaches seq 3 again, with another entry there: still behind.
    await log.append([record(9)]);
    await log.append([record(10)]);
    expect(await log.checkpointAll()).toEqual({ written: 0, behind: ['acme'], sinkBehind: [] });
    // Removed from Redis's list of tenants, it is still checked (the archive has its checkpoints).
    await redis.del('rein:audit-tenants');
    expect((await log.checkpointAll()).behind).toEqual(['acme']);
  });

  it('a checkpointed entry trimmed to the archive still counts as held', async () => {
    await log.append([record(1)]);
    expect(await log.checkpointAll()).toEqual({ written: 1, behind: [], sinkBehind: [] });
    await fillAndAge();
    expect(await redis.hexists(tenantKeys('acme').audit, '1')).toBe(0);
    expect(await log.checkpointAll()).toEqual({ written: 1, behind: [], sinkBehind: [] });
    expect(await log.latestCheckpoint('acme')).toMatchObject({ seq: 7 });
  });

  it('signs checkpoints and sends them to the sink; a sink that is down blocks no decision and is reported each pass', async () => {
    const signer = createAuditSigner(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    const taken: SignedCheckpoint[] = [];
    let up = false;
    const sink: CheckpointSink = {
      name: 'test sink',
      write: async (c) => {
        if (!up) throw new Error('connect ECONNREFUSED');
        taken.push(c);
      },
    };
    log = new AuditLog(redis, undefined, () => clock, { cold: new AuditArchive(pool), retentionMs: HOUR }, { signer, sink });
    for (let n = 1; n <= 2; n++) await log.append([record(n)]);
    // Down: the archive still takes its (signed) copy, the pass names the tenant, and appends go on.
    expect(await log.checkpointAll()).toEqual({ written: 1, behind: [], sinkBehind: ['acme'] });
    expect(await log.latestCheckpoint('acme')).toMatchObject({ seq: 2, keyId: signer.keyId, signature: expect.any(String) });
    await log.append([record(3)]);
    expect((await log.head('acme')).seq).toBe(3);
    expect((await log.checkpointAll()).sinkBehind).toEqual(['acme']);
    // Back: the head it missed is sent, once, signed; the archive's copy verifies with the same key.
    up = true;
    expect(await log.checkpointAll()).toEqual({ written: 1, behind: [], sinkBehind: [] });
    expect(await log.checkpointAll()).toEqual({ written: 0, behind: [], sinkBehind: [] });
    expect(taken).toEqual([expect.objectContaining({ tenantId: 'acme', seq: 3, hash: (await log.head('acme')).hash })]);
    expect(verifyCheckpoint(taken[0] as SignedCheckpoint, signer.keys())).toEqual({ ok: true });
    const archived = (await log.latestCheckpoint('acme')) as AuditCheckpoint;
    expect(verifyCheckpoint({ tenantId: 'acme', ...archived } as SignedCheckpoint, signer.keys())).toEqual({ ok: true });
  });

  it('without an archive, Redis keeps every entry', async () => {
    log = new AuditLog(redis, undefined, () => clock);
    await fillAndAge();
    expect((await redis.hkeys(tenantKeys('acme').audit)).sort()).toEqual(['1', '2', '3', '4', '5', '6']);
  });
});
