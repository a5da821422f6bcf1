import type { RunRecord } from '@rein/contract';
import { defineAgent } from '@rein/define/internal';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Enqueue, slotJobSchema } from '../src/adapters/queue/job-catalog.js';
import { connectRedis, type RedisClient } from '../src/adapters/redis/redis.js';
import { RedisOutages } from '../src/adapters/redis/redis-outages.js';
import { TenantQuotas } from '../src/adapters/redis/tenant-quotas.js';
import { createFairShare } from '../src/features/runs/fair-share.js';
import type { Quotas } from '../src/shared/config.js';
import { fairShareKeys, tenantKeys } from '../src/shared/keys.js';
import { createFakeModel, startTestCluster, startTestRedis, type TestCluster, type TestRedis, toolCall } from '../src/testing/index.js';
import { harnessPerTest, USER } from './harness.js';

/**
 * Fair share across tenants (`fairShareSlots`): the admission and slot path as the services
 * run it (quotas.admit, then the `slot` job's fill; a finish's fill with the run it freed),
 * over a real Redis and a real Redis Cluster. Only the order runs start in is asserted.
 */

const quota = { maxConcurrentRuns: 100, tokensPerDay: 5_000_000, costPerDayUsd: 100, queueBeyondLimit: true };

/** A fleet's view of fair share: submit, finish, and the order runs got their first step in. */
function fleetOver(redis: RedisClient, quotas: Quotas) {
  const runs = new Map<string, RunRecord>();
  const started: string[] = [];
  const q = new TenantQuotas(redis, quotas);
  const enqueue: Enqueue = async (name, job) => {
    if (name === 'step') started.push((job as { runId: string }).runId);
  };
  const share = createFairShare({ store: { get: async (id) => runs.get(id) ?? null }, quotas: q, enqueue });
  const run = (tenantId: string, id: string) => ({ id, tenantId, status: 'queued', step: 0 }) as RunRecord;
  return {
    started,
    async submit(tenantId: string, id: string) {
      runs.set(id, run(tenantId, id));
      const admission = await q.admit(tenantId, id);
      if (admission === 'admitted') started.push(id);
      else {
        await q.wait(tenantId, id, admission);
        await share.fill(tenantId);
      }
    },
    /** The oldest run still going finishes; its slot is handed out. */
    async finishOldest() {
      const id = started.find((s) => runs.get(s)?.status === 'queued');
      if (!id) throw new Error('nothing running');
      const r = runs.get(id) as RunRecord;
      runs.set(id, { ...r, status: 'succeeded' });
      await share.fill(r.tenantId, id);
    },
  };
}

const heavy = (n: number) => `heavy-${n}`;

function fairnessCases(connect: () => Promise<RedisClient>) {
  it("hands one tenant's single run the next freed slot while another floods", async () => {
    const redis = await connect();
    const fleet = fleetOver(redis, { default: quota, tenants: {}, fairShareSlots: 2 });
    for (let n = 0; n < 20; n++) await fleet.submit('heavy', heavy(n));
    // Two slots for the whole fleet: the flood holds both, the rest waits.
    expect(fleet.started).toEqual([heavy(0), heavy(1)]);
    await fleet.submit('light', 'light-0');
    expect(fleet.started).toHaveLength(2);
    await fleet.finishOldest();
    // Within one slot's turn: the first slot freed goes to the light tenant, not to the flood.
    expect(fleet.started).toEqual([heavy(0), heavy(1), 'light-0']);
    for (let n = 0; n < 4; n++) await fleet.finishOldest();
    expect(fleet.started.slice(3)).toEqual([heavy(2), heavy(3), heavy(4), heavy(5)]);
  });

  it('takes turns: two flooding tenants alternate, each in its own submission order', async () => {
    const redis = await connect();
    const fleet = fleetOver(redis, { default: quota, tenants: {}, fairShareSlots: 1 });
    for (let n = 0; n < 5; n++) await fleet.submit('a', `a-${n}`);
    for (let n = 0; n < 5; n++) await fleet.submit('b', `b-${n}`);
    for (let n = 0; n < 9; n++) await fleet.finishOldest();
    expect(fleet.started).toEqual(['a-0', 'b-0', 'a-1', 'b-1', 'a-2', 'b-2', 'a-3', 'b-3', 'a-4', 'b-4']);
  });

  it('never lets a tenant that runs one at a time jump ahead of one already waiting for a turn', async () => {
    const redis = await connect();
    const fleet = fleetOver(redis, {
      default: quota,
      tenants: { a: { ...quota, maxConcurrentRuns: 1 } },
      fairShareSlots: 1,
    });
    for (let n = 0; n < 4; n++) await fleet.submit('a', `a-${n}`);
    await fleet.submit('x', 'x-0');
    expect(fleet.started).toEqual(['a-0']);
    // a-0's finish lets a-1 into the line for a turn; x-0 was waiting first, so it takes it.
    await fleet.finishOldest();
    expect(fleet.started).toEqual(['a-0', 'x-0']);
    for (let n = 0; n < 3; n++) await fleet.finishOldest();
    expect(fleet.started).toEqual(['a-0', 'x-0', 'a-1', 'a-2', 'a-3']);
  });

  it('gives back the slot handed to a run that ended waiting, though its tenant no longer shares fleet-wide slots', async () => {
    const redis = await connect();
    const runs = new Map<string, RunRecord>();
    const store = { get: async (id: string) => runs.get(id) ?? null };
    const enqueue: Enqueue = async () => {};
    const sharing = new TenantQuotas(redis, { default: quota, tenants: {}, fairShareSlots: 1 });
    for (const id of ['a-0', 'a-1']) {
      runs.set(id, { id, tenantId: 'a', status: 'queued', step: 0 } as RunRecord);
      const admission = await sharing.admit('a', id);
      if (admission !== 'admitted') await sharing.wait('a', id, admission);
    }
    await createFairShare({ store, quotas: sharing, enqueue }).fill('a');
    expect(await redis.smembers(fairShareKeys.slots)).toEqual(['a-0']);
    // Redeployed with `a` no longer queueing beyond its limit; a-1 was cancelled in its line, a-0 finished.
    const plain = new TenantQuotas(redis, { default: quota, tenants: { a: { ...quota, queueBeyondLimit: false } }, fairShareSlots: 1 });
    runs.set('a-1', { ...(runs.get('a-1') as RunRecord), status: 'cancelled' });
    runs.set('a-0', { ...(runs.get('a-0') as RunRecord), status: 'succeeded' });
    await redis.srem(fairShareKeys.slots, 'a-0'); // what a-0's finishing commit does
    await createFairShare({ store, quotas: plain, enqueue }).fill('a', 'a-0');
    // a-1's stale turn was skipped: the fleet's one slot is free for the next tenant.
    expect(await redis.smembers(fairShareKeys.slots)).toEqual([]);
  });

  it("keeps each tenant's own limit below the fleet's slots, and starts tenants that do not queue at once", async () => {
    const redis = await connect();
    const fleet = fleetOver(redis, {
      default: { ...quota, queueBeyondLimit: false },
      tenants: { a: { ...quota, maxConcurrentRuns: 1 }, b: quota },
      fairShareSlots: 3,
    });
    for (let n = 0; n < 3; n++) await fleet.submit('a', `a-${n}`);
    await fleet.submit('b', 'b-0');
    await fleet.submit('plain', 'plain-0');
    // a runs one at a time (its own limit) though fleet slots are free; plain takes no fleet slot.
    expect(fleet.started).toEqual(['a-0', 'b-0', 'plain-0']);
    await fleet.finishOldest();
    expect(fleet.started.at(-1)).toBe('a-1');
  });
}

describe('fair share across tenants on one Redis', () => {
  let server: TestRedis;
  const clients: Redis[] = [];
  beforeAll(async () => {
    server = await startTestRedis();
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await server.stop();
  });
  fairnessCases(async () => {
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    clients.push(redis);
    await redis.flushdb();
    return redis;
  });
});

describe('fair share across tenants on a Redis Cluster', () => {
  let cluster: TestCluster;
  const clients: RedisClient[] = [];
  beforeAll(async () => {
    cluster = await startTestCluster();
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await cluster?.stop();
  });
  fairnessCases(async () => {
    const redis = await connectRedis(
      { url: 'redis://127.0.0.1:1', clusterNodes: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })), tls: 'off' },
      'producer',
      new RedisOutages(pino({ level: 'silent' })),
    );
    clients.push(redis);
    // Each case starts from an empty cluster.
    await Promise.all(
      cluster.nodes.map(async (n) => {
        const node = new Redis(n.port, '127.0.0.1');
        await node.flushall().catch(() => undefined); // a replica refuses: its master's flush reaches it
        node.disconnect();
      }),
    );
    return redis;
  });
});

describe('a run parked for a person, with fleet-wide slots', () => {
  const use = harnessPerTest();

  /** Fair share on the harness, and a runner of the `slot` jobs the run service enqueued, as the worker runs them. */
  function fairShareOf(t: ReturnType<typeof use>) {
    const share = createFairShare({ store: t.store, quotas: t.quotas, enqueue: t.enqueue });
    const slotJobs = async () => {
      for (let i = t.queue.findIndex((q) => q.name === 'slot'); i >= 0; i = t.queue.findIndex((q) => q.name === 'slot')) {
        const job = slotJobSchema.parse(t.queue.splice(i, 1)[0]?.job);
        await share.fill(job.tenantId, job.freed ? job.runId : undefined);
      }
    };
    return { share, slotJobs };
  }

  it('gives its slot back at once: the next fill hands it to a waiting run', async () => {
    const ticket = { orderNo: '2024001', type: 'refund', priority: 'high', suggestedAction: 'refund' };
    const t = use(createFakeModel([{ toolCalls: [toolCall('w1', 'create_ticket', ticket)] }, { content: 'done' }]), {
      quotas: { default: quota, tenants: {}, fairShareSlots: 1 },
    });
    const { share, slotJobs } = fairShareOf(t);
    const first = await t.submit('open a ticket');
    await slotJobs();
    const second = await t.submit('and another');
    await slotJobs();
    expect(await t.redis.smembers(fairShareKeys.slots)).toEqual([first]);
    expect(t.queue.filter((q) => q.name === 'step').map((q) => (q.job as { runId: string }).runId)).toEqual([first]);
    await t.drain(1);
    expect((await t.store.require(first)).status).toBe('pending_approval');
    expect(await t.redis.smembers(fairShareKeys.slots)).toEqual([]);
    // The next finish or reaper pass fills it.
    expect(await share.fill(USER.tenantId)).toBe(1);
    expect(await t.redis.smembers(fairShareKeys.slots)).toEqual([second]);
  });

  it('keeps its slot while it waits for its children: they work under it, so the fleet runs no more trees than its slots', async () => {
    const researcher = defineAgent({
      name: 'researcher',
      description: 'Looks up policies.',
      instructions: 'You are the researcher.',
      tools: ['search_policy'],
    });
    const model = createFakeModel([
      (request) =>
        String(request.messages[0]?.content ?? '').startsWith('You are the researcher')
          ? { content: 'found it' }
          : { toolCalls: [toolCall('c1', 'call_researcher', { input: 'dig' })] },
    ]);
    const t = use(model, {
      agents: [researcher],
      profile: { agents: ['researcher'] },
      quotas: { default: quota, tenants: {}, fairShareSlots: 1 },
    });
    const { share, slotJobs } = fairShareOf(t);
    const first = await t.submit('research this');
    await slotJobs();
    const second = await t.submit('and this');
    await slotJobs();
    await t.drain(1);
    expect((await t.store.require(first)).status).toBe('waiting');
    expect(await t.redis.smembers(fairShareKeys.slots)).toEqual([first]);
    expect(await share.fill(USER.tenantId)).toBe(0);
    expect((await t.store.require(second)).status).toBe('queued');
  });
});

describe('a run admitted while a finishing run hands out its slot', () => {
  const use = harnessPerTest();

  it.each([
    ['a fleet-wide turn', { default: quota, tenants: {}, fairShareSlots: 1 }],
    ["its tenant's slot", { default: { ...quota, maxConcurrentRuns: 1 }, tenants: {} }],
  ])('gets %s: it joins the line only once its record exists, and starts', async (_what, quotas: Quotas) => {
    const t = use(createFakeModel([{ content: 'done' }]), { quotas });
    const share = createFairShare({ store: t.store, quotas: t.quotas, enqueue: t.enqueue });
    // Another run of the tenant holds the slots; it finishes while the new run is admitted, before its record is written.
    await t.redis.sadd(tenantKeys(USER.tenantId).active, 'finishing');
    if (quotas.fairShareSlots) await t.redis.sadd(fairShareKeys.slots, 'finishing');
    const create = t.store.create.bind(t.store);
    t.store.create = async (...args) => {
      await share.fill(USER.tenantId, 'finishing');
      return create(...args);
    };
    const id = await t.submit('hello');
    t.store.create = create;
    for (let i = t.queue.findIndex((q) => q.name === 'slot'); i >= 0; i = t.queue.findIndex((q) => q.name === 'slot')) {
      const job = slotJobSchema.parse(t.queue.splice(i, 1)[0]?.job);
      await share.fill(job.tenantId, job.freed ? job.runId : undefined);
    }
    expect(t.queue.filter((q) => q.name === 'step').map((q) => (q.job as { runId: string }).runId)).toEqual([id]);
    // It counts against its tenant's limit (and holds the fleet's slot).
    expect(await t.redis.smembers(tenantKeys(USER.tenantId).active)).toEqual([id]);
    if (quotas.fairShareSlots) expect(await t.redis.smembers(fairShareKeys.slots)).toEqual([id]);
  });
});
