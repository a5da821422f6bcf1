import { Client, type Item, type ListNamespaceResponse, type SearchItemsResponse } from '@langchain/langgraph-sdk';
import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const fleet = fleetPerFile({ env: { REIN_STORE_MAX_VALUE_BYTES: '1024' } });

/** The SDK as its users run it: `<api>/lg`, a Rein key in `x-api-key`, no retries hiding a refusal. */
const sdk = (key = KEYS.user.key) => new Client({ apiUrl: `${fleet().api}/lg`, apiKey: key, callerOptions: { maxRetries: 0 } });

/** `client.store` against Rein (Redis here; the PostgreSQL store follows the same spec, packages/core/test/item-store.int.test.ts). */
describe('the LangGraph SDK store against Rein', () => {
  it('puts, gets, searches, lists namespaces and deletes, each answer of the SDK’s own types', async () => {
    const store = sdk().store;
    await store.putItem(['memories', 'zhangsan'], 'lang', { lang: 'zh', note: '喜欢中文回复' });
    await store.putItem(['memories', 'zhangsan'], 'order', { orderNo: '2024001', status: 'late' });
    await store.putItem(['profile'], 'tz', { tz: 'Asia/Shanghai' }, { ttl: 60 });

    const item: Item | null = await store.getItem(['memories', 'zhangsan'], 'lang');
    expect(item).toMatchObject({ namespace: ['memories', 'zhangsan'], key: 'lang', value: { lang: 'zh' } });
    expect(Date.parse(item?.createdAt ?? '')).toBeGreaterThan(0);

    const found: SearchItemsResponse = await store.searchItems(['memories'], { query: '中文' });
    expect(found.items.map((i) => i.key)).toEqual(['lang']);
    expect((await store.searchItems(['memories'], { filter: { status: 'late' } })).items.map((i) => i.key)).toEqual(['order']);
    const spaces: ListNamespaceResponse = await store.listNamespaces({ maxDepth: 1 });
    expect(spaces.namespaces).toEqual([['memories'], ['profile']]);

    await store.deleteItem(['memories', 'zhangsan'], 'order');
    expect(await store.getItem(['memories', 'zhangsan'], 'order')).toBeNull();
    expect((await sdk().store.searchItems([], { limit: 100 })).items).toHaveLength(2);
  });

  it("keeps one user's items from another user and another tenant; refuses what it must, with Rein's codes", async () => {
    await sdk(KEYS.user.key).store.putItem(['secret'], 'k', { pin: '1234' });
    expect(await sdk(KEYS.approver.key).store.getItem(['secret'], 'k')).toBeNull();
    expect(await sdk(KEYS.other.key).store.getItem(['secret'], 'k')).toBeNull();
    expect((await sdk(KEYS.other.key).store.searchItems([], { query: '1234' })).items).toEqual([]);

    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => 'stored',
        (err: Error) => err.message,
      );
    expect(await refusal(sdk().store.putItem(['big'], 'k', { s: 'x'.repeat(2000) }))).toMatch(/store_value_too_large/);
    expect(await refusal(sdk().store.putItem(Array(11).fill('n'), 'k', {}))).toMatch(/invalid_request/);
    const res = await fetch(`${fleet().api}/lg/store/items`, {
      method: 'PUT',
      headers: { 'x-api-key': KEYS.user.key, 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: ['x'], key: 'k', value: 'not an object' }),
    });
    expect(res.status).toBe(400);
    expect(await (await fetch(`${fleet().api}/lg/info`, { headers: { 'x-api-key': KEYS.user.key } })).json()).toMatchObject({
      flags: { store: true },
    });
  });
});
