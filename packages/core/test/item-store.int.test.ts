import type { Principal } from '@rein/contract';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ArchivePool, createArchivePool } from '../src/adapters/postgres/archive-pool.js';
import { migrateArchive } from '../src/adapters/postgres/migrations.js';
import { PgItemStore } from '../src/adapters/postgres/pg-item-store.js';
import { RedisItemStore } from '../src/adapters/redis/redis-item-store.js';
import { createStoreService, type StoreService } from '../src/features/store/store-service.js';
import type { ItemStore } from '../src/policy/store/store-items.js';
import { startTestRedis, type TestRedis } from '../src/testing/index.js';
import { startTestPostgres } from '../src/testing/postgres-server.js';

const db = await startTestPostgres('the store in PostgreSQL');

const ann: Principal = { tenantId: 'acme', userId: 'ann', roles: ['user'] };
const bob: Principal = { tenantId: 'acme', userId: 'bob', roles: ['user'] };
const admin: Principal = { tenantId: 'acme', userId: 'root', roles: ['admin'] };
const eve: Principal = { tenantId: 'globex', userId: 'ann', roles: ['user'] };

let server: TestRedis;
let redis: Redis;
let pool: ArchivePool | undefined;
beforeAll(async () => {
  server = await startTestRedis();
  redis = new Redis(server.url);
  if (db) {
    pool = createArchivePool(db.url, { max: 8 });
    await migrateArchive(pool);
  }
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
  await pool?.end();
  await db?.stop();
});

/** One spec, both stores: the same rules whichever keeps the items. */
const stores: Array<[string, () => ItemStore, () => Promise<unknown>]> = [
  ['Redis', () => new RedisItemStore(redis), () => redis.flushdb()],
  ...(db
    ? [
        ['PostgreSQL', () => new PgItemStore(pool as ArchivePool), () => (pool as ArchivePool).query('TRUNCATE rein.store_items')] as [
          string,
          () => ItemStore,
          () => Promise<unknown>,
        ],
      ]
    : []),
];

describe.each(stores)('the store in %s', (_name, make, clear) => {
  let clock: number;
  let store: StoreService;
  beforeEach(async () => {
    await clear();
    clock = Date.parse('2026-12-05T00:00:00.000Z');
    store = createStoreService({ items: make(), maxValueBytes: 1024, maxItems: 20, now: () => clock });
  });

  it('puts, gets, replaces (keeping its creation time) and deletes an item', async () => {
    await store.put(ann, { namespace: ['prefs', 'ann'], key: 'lang', value: { lang: 'zh', level: 2 } });
    clock += 1000;
    await store.put(ann, { namespace: ['prefs', 'ann'], key: 'lang', value: { lang: 'en', level: 3 } });
    expect(await store.get(ann, ['prefs', 'ann'], 'lang')).toEqual({
      namespace: ['prefs', 'ann'],
      key: 'lang',
      value: { lang: 'en', level: 3 },
      created_at: '2026-12-05T00:00:00.000Z',
      updated_at: '2026-12-05T00:00:01.000Z',
    });
    await store.delete(ann, ['prefs', 'ann'], 'lang');
    expect(await store.get(ann, ['prefs', 'ann'], 'lang')).toBeNull();
  });

  it("keeps each user's items theirs, the tenant's shared space the admins', and tenants apart", async () => {
    await store.put(ann, { namespace: ['notes'], key: 'k', value: { who: 'ann' } });
    await store.put(admin, { namespace: ['notes'], key: 'k', value: { who: 'tenant' } });
    expect(await store.get(bob, ['notes'], 'k')).toBeNull();
    expect(await store.get(eve, ['notes'], 'k')).toBeNull(); // same user id, another tenant
    expect((await store.get(admin, ['notes'], 'k'))?.value).toEqual({ who: 'tenant' });
    expect((await store.get(ann, ['notes'], 'k'))?.value).toEqual({ who: 'ann' });
    expect((await store.search(bob, { namespace_prefix: [], limit: 10, offset: 0 })).items).toEqual([]);
    expect((await store.namespaces(eve, { limit: 10, offset: 0 })).namespaces).toEqual([]);
    // A user id with glob characters matches only itself.
    expect((await store.search({ ...ann, userId: 'an*' }, { namespace_prefix: [], limit: 10, offset: 0 })).items).toEqual([]);
    expect((await store.search({ ...ann, userId: 'a[n]n' }, { namespace_prefix: [], limit: 10, offset: 0 })).items).toEqual([]);
    await store.delete(bob, ['notes'], 'k'); // another user's delete touches only their own space
    expect(await store.get(ann, ['notes'], 'k')).not.toBeNull();
  });

  it('searches by prefix, filter and text (Chinese and Latin), newest first, with offset and limit', async () => {
    const put = async (ns: string[], key: string, value: Record<string, unknown>) => {
      await store.put(ann, { namespace: ns, key, value });
      clock += 1000;
    };
    await put(['orders', '2024001'], 'complaint', { text: '客户张三投诉订单一直没发货', priority: 3 });
    await put(['orders', '2024001'], 'note', { text: 'Warehouse chased', priority: 1 });
    await put(['orders', 'A12345'], 'note', { text: 'shipped on time', priority: 2 });
    await put(['profile'], 'ann', { text: 'prefers Chinese' });
    const keys = async (q: Parameters<StoreService['search']>[1]) =>
      (await store.search(ann, q)).items.map((i) => `${i.namespace.join('.')}/${i.key}`);
    expect(await keys({ namespace_prefix: ['orders'], limit: 10, offset: 0 })).toEqual([
      'orders.A12345/note',
      'orders.2024001/note',
      'orders.2024001/complaint',
    ]);
    expect(await keys({ namespace_prefix: ['orders', '*'], filter: { priority: { $gte: 2 } }, limit: 10, offset: 0 })).toEqual([
      'orders.A12345/note',
      'orders.2024001/complaint',
    ]);
    expect(await keys({ namespace_prefix: [], query: '没发货', limit: 10, offset: 0 })).toEqual(['orders.2024001/complaint']);
    expect(await keys({ namespace_prefix: [], query: 'WAREHOUSE chased', limit: 10, offset: 0 })).toEqual(['orders.2024001/note']);
    expect(await keys({ namespace_prefix: [], filter: { priority: 1 }, limit: 10, offset: 0 })).toEqual(['orders.2024001/note']);
    expect(await keys({ namespace_prefix: [], limit: 2, offset: 1 })).toEqual(['orders.A12345/note', 'orders.2024001/note']);
    expect(await keys({ namespace_prefix: [], query: '100%_', limit: 10, offset: 0 })).toEqual([]);
    await expect(
      store.search(ann, { namespace_prefix: [], filter: { priority: { $where: 1 } }, limit: 10, offset: 0 }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect((await store.namespaces(ann, { limit: 10, offset: 0 })).namespaces).toEqual([
      ['orders', '2024001'],
      ['orders', 'A12345'],
      ['profile'],
    ]);
    expect((await store.namespaces(ann, { prefix: ['orders'], max_depth: 1, limit: 10, offset: 0 })).namespaces).toEqual([['orders']]);
    expect((await store.namespaces(ann, { suffix: ['A12345'], limit: 10, offset: 0 })).namespaces).toEqual([['orders', 'A12345']]);
  });

  it('forgets an item past its TTL; a read that refreshes it keeps it', async () => {
    await store.put(ann, { namespace: ['s'], key: 'short', value: { v: 1 }, ttl: 1 });
    await store.put(ann, { namespace: ['s'], key: 'kept', value: { v: 2 }, ttl: 1 });
    clock += 50_000;
    expect(await store.get(ann, ['s'], 'kept', true)).not.toBeNull(); // refreshed: a minute from now
    clock += 30_000;
    expect(await store.get(ann, ['s'], 'short')).toBeNull();
    expect((await store.search(ann, { namespace_prefix: ['s'], limit: 10, offset: 0 })).items.map((i) => i.key)).toEqual(['kept']);
  });

  it('a refresh neither brings back an item deleted since its read nor undoes a newer put', async () => {
    const items = make();
    // Between the read and its refresh, another caller deletes one item and replaces the other.
    const racing: ItemStore = {
      put: items.put.bind(items),
      list: items.list.bind(items),
      delete: items.delete.bind(items),
      touch: items.touch.bind(items),
      get: async (tenantId, scope, namespace, key) => {
        const read = await items.get(tenantId, scope, namespace, key);
        clock += 1_000;
        if (key === 'gone') await items.delete(tenantId, scope, namespace, key);
        else await raced.put(ann, { namespace: [...namespace], key, value: { v: 'newer' }, ttl: 1 });
        return read;
      },
    };
    const raced = createStoreService({ items, maxValueBytes: 1024, maxItems: 20, now: () => clock });
    const refreshing = createStoreService({ items: racing, maxValueBytes: 1024, maxItems: 20, now: () => clock });
    await store.put(ann, { namespace: ['r'], key: 'gone', value: { v: 1 }, ttl: 1 });
    await store.put(ann, { namespace: ['r'], key: 'moved', value: { v: 'older' }, ttl: 1 });
    await refreshing.get(ann, ['r'], 'gone', true);
    await refreshing.get(ann, ['r'], 'moved', true);
    expect(await store.get(ann, ['r'], 'gone')).toBeNull();
    expect((await store.get(ann, ['r'], 'moved'))?.value).toEqual({ v: 'newer' });
  });

  it('refuses a value too large, a bad namespace or key, and a tenant past its limit — even under concurrent puts', async () => {
    await expect(store.put(ann, { namespace: ['x'], key: 'big', value: { s: 'x'.repeat(2000) } })).rejects.toMatchObject({
      code: 'store_value_too_large',
    });
    await expect(store.put(ann, { namespace: ['a.b'], key: 'k', value: {} })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(store.put(ann, { namespace: [], key: 'k', value: {} })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(store.put(ann, { namespace: Array(11).fill('n'), key: 'k', value: {} })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) => store.put(i % 2 ? ann : admin, { namespace: ['many'], key: `k${i}`, value: { i } })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(20);
    expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(
      Array(20).fill('store_full'),
    );
    // Replacing an item it holds is always allowed; another tenant has a limit of its own.
    const held = results.findIndex((r) => r.status === 'fulfilled');
    await store.put(held % 2 ? ann : admin, { namespace: ['many'], key: `k${held}`, value: { replaced: true } });
    await store.put(eve, { namespace: ['many'], key: 'k', value: {} });
  });

  it('counts an expired item against the limit no longer once a put finds the store full', async () => {
    for (let i = 0; i < 20; i++) await store.put(ann, { namespace: ['t'], key: `k${i}`, value: { i }, ttl: 1 });
    await expect(store.put(ann, { namespace: ['t'], key: 'more', value: {} })).rejects.toMatchObject({ code: 'store_full' });
    clock += 2 * 60_000;
    await store.put(ann, { namespace: ['t'], key: 'more', value: {} });
    expect((await store.search(ann, { namespace_prefix: ['t'], limit: 100, offset: 0 })).items.map((i) => i.key)).toEqual(['more']);
  });
});
