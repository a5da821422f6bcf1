import type { ItemStore, StoredItem, StoreScope } from '../../policy/store/store-items.js';
import { itemAddress, startsWith } from '../../policy/store/store-items.js';
import { tenantKeys } from '../../shared/keys.js';
import { type ScriptGateway, scriptGateway } from './lua-scripts.js';
import type { RedisClient } from './redis.js';

/** A literal for HSCAN's MATCH: the glob's own characters escaped. */
const globEscaped = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

const parse = (raw: string): StoredItem | null => {
  try {
    return JSON.parse(raw) as StoredItem;
  } catch {
    return null;
  }
};

/**
 * The store in Redis (no archive configured): one hash per tenant, item address → item
 * JSON. A tenant holds at most REIN_STORE_MAX_ITEMS items, so a listing scans one bounded hash.
 */
export class RedisItemStore implements ItemStore {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;

  constructor(redis: RedisClient) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  async put(tenantId: string, scope: StoreScope, item: StoredItem, maxItems: number): Promise<boolean> {
    const address = itemAddress(scope, item.namespace, item.key);
    return (
      (await this.scripts.putStoreItem({ store: tenantKeys(tenantId).store }, { address, json: JSON.stringify(item), max: maxItems })) === 1
    );
  }

  async get(tenantId: string, scope: StoreScope, namespace: readonly string[], key: string): Promise<StoredItem | null> {
    const raw = await this.redis.hget(tenantKeys(tenantId).store, itemAddress(scope, namespace, key));
    return raw === null ? null : parse(raw);
  }

  async touch(tenantId: string, scope: StoreScope, read: StoredItem, expiresAt: number): Promise<void> {
    const field = itemAddress(scope, read.namespace, read.key);
    const raw = await this.redis.hget(tenantKeys(tenantId).store, field);
    const held = raw === null ? null : parse(raw);
    if (!held || held.updatedAt !== read.updatedAt) return;
    await this.scripts.hsetIfSame(
      { hash: tenantKeys(tenantId).store },
      { field, held: raw as string, next: JSON.stringify({ ...held, expiresAt }) },
    );
  }

  async delete(tenantId: string, scope: StoreScope, namespace: readonly string[], key: string): Promise<void> {
    await this.redis.hdel(tenantKeys(tenantId).store, itemAddress(scope, namespace, key));
  }

  async list(tenantId: string, scope: StoreScope, prefix: readonly string[]): Promise<StoredItem[]> {
    const items: StoredItem[] = [];
    const mine = `${scope}\u0000`;
    let cursor = '0';
    do {
      // Only the scope's fields cross the wire (another user's items are skipped by Redis itself).
      const [next, flat] = await this.redis.hscan(tenantKeys(tenantId).store, cursor, 'MATCH', `${globEscaped(mine)}*`, 'COUNT', 1000);
      for (let i = 0; i < flat.length; i += 2) {
        if (!(flat[i] as string).startsWith(mine)) continue;
        const item = parse(flat[i + 1] as string);
        if (item && startsWith(item.namespace, prefix)) items.push(item);
      }
      cursor = next;
    } while (cursor !== '0');
    return items;
  }
}
