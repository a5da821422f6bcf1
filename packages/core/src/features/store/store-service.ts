import type { Principal } from '@rein/contract';
import {
  expired,
  filterProblem,
  type ItemStore,
  MAX_KEY_LENGTH,
  matchesFilter,
  matchesQuery,
  namespaceProblem,
  namespacesOf,
  type StoredItem,
  scopeOf,
} from '../../policy/store/store-items.js';
import { ConflictError, InvalidRequestError } from '../../shared/errors.js';

export interface StoreServiceDeps {
  items: ItemStore;
  /** REIN_STORE_MAX_VALUE_BYTES: the largest value (its JSON, in bytes). */
  maxValueBytes: number;
  /** REIN_STORE_MAX_ITEMS: items one tenant may hold. */
  maxItems: number;
  now?: () => number;
}

/** An item as the LangGraph API answers it. */
export interface ItemView {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

const view = (i: StoredItem): ItemView => ({
  namespace: i.namespace,
  key: i.key,
  value: i.value,
  created_at: i.createdAt,
  updated_at: i.updatedAt,
});

function checkAddress(namespace: readonly string[], key: string) {
  const problem = namespaceProblem(namespace);
  if (problem) throw new InvalidRequestError(problem);
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) throw new InvalidRequestError(`a key has 1 to ${MAX_KEY_LENGTH} characters`);
}

/**
 * The store behind the LangGraph SDK's `client.store`: namespaced JSON items per tenant —
 * an admin's in the tenant's shared space, anyone else's in their own (policy/store) —,
 * bounded in value size and in items per tenant, with a TTL in minutes refreshed on read
 * when asked. Kept in PostgreSQL with the archive, in Redis otherwise; the rules are the same.
 */
export function createStoreService(deps: StoreServiceDeps) {
  const now = deps.now ?? Date.now;
  const { items } = deps;

  /** The caller's live items under `prefix`; expired ones are dropped (and deleted, best effort). */
  async function live(p: Principal, prefix: readonly string[], query?: string): Promise<StoredItem[]> {
    const scope = scopeOf(p);
    const all = await items.list(p.tenantId, scope, prefix, query);
    const at = now();
    const gone = all.filter((i) => expired(i, at));
    for (const i of gone) await items.delete(p.tenantId, scope, i.namespace, i.key).catch(() => undefined);
    return all.filter((i) => !expired(i, at));
  }

  async function refresh(p: Principal, hits: StoredItem[]): Promise<void> {
    const at = now();
    for (const i of hits.filter((h) => h.ttlMinutes !== undefined))
      await items.touch(p.tenantId, scopeOf(p), i, at + (i.ttlMinutes as number) * 60_000);
  }

  return {
    async put(p: Principal, body: { namespace: string[]; key: string; value: Record<string, unknown>; ttl?: number | null | undefined }) {
      checkAddress(body.namespace, body.key);
      const bytes = Buffer.byteLength(JSON.stringify(body.value));
      if (bytes > deps.maxValueBytes)
        throw new InvalidRequestError(
          `the value is ${bytes} bytes; a store value is at most ${deps.maxValueBytes} (REIN_STORE_MAX_VALUE_BYTES)`,
          'store_value_too_large',
        );
      const at = now();
      const before = await items.get(p.tenantId, scopeOf(p), body.namespace, body.key);
      const kept = before && !expired(before, at) ? before : null;
      const ttl = body.ttl ?? undefined;
      const item: StoredItem = {
        namespace: body.namespace,
        key: body.key,
        value: body.value,
        createdAt: kept?.createdAt ?? new Date(at).toISOString(),
        updatedAt: new Date(at).toISOString(),
        ...(ttl !== undefined ? { ttlMinutes: ttl, expiresAt: at + ttl * 60_000 } : {}),
      };
      if (await items.put(p.tenantId, scopeOf(p), item, deps.maxItems)) return;
      // Expired items still count until someone reads past them: drop the caller's, then try once more.
      await live(p, []);
      if (!(await items.put(p.tenantId, scopeOf(p), item, deps.maxItems)))
        throw new ConflictError('store_full', `the tenant's store holds ${deps.maxItems} items, as many as it may (REIN_STORE_MAX_ITEMS)`);
    },

    async get(p: Principal, namespace: string[], key: string, refreshTtl = false): Promise<ItemView | null> {
      checkAddress(namespace, key);
      const item = await items.get(p.tenantId, scopeOf(p), namespace, key);
      if (!item || expired(item, now())) return null;
      if (refreshTtl) await refresh(p, [item]);
      return view(item);
    },

    async delete(p: Principal, namespace: string[], key: string): Promise<void> {
      checkAddress(namespace, key);
      await items.delete(p.tenantId, scopeOf(p), namespace, key);
    },

    async search(
      p: Principal,
      q: {
        namespace_prefix: string[];
        filter?: Record<string, unknown> | undefined;
        limit: number;
        offset: number;
        query?: string | undefined;
        refresh_ttl?: boolean | undefined;
      },
    ): Promise<{ items: ItemView[] }> {
      const problem = namespaceProblem(q.namespace_prefix, true) ?? (q.filter ? filterProblem(q.filter) : null);
      if (problem) throw new InvalidRequestError(problem);
      const found = (await live(p, q.namespace_prefix, q.query))
        .filter((i) => matchesFilter(i.value, q.filter) && matchesQuery(i.value, q.query))
        .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || a.key.localeCompare(b.key))
        .slice(q.offset, q.offset + q.limit);
      if (q.refresh_ttl) await refresh(p, found);
      return { items: found.map(view) };
    },

    async namespaces(
      p: Principal,
      q: { prefix?: string[] | undefined; suffix?: string[] | undefined; max_depth?: number | undefined; limit: number; offset: number },
    ): Promise<{ namespaces: string[][] }> {
      const problem = namespaceProblem(q.prefix ?? [], true) ?? namespaceProblem(q.suffix ?? [], true);
      if (problem) throw new InvalidRequestError(problem);
      const all = namespacesOf(await live(p, []), { prefix: q.prefix, suffix: q.suffix, maxDepth: q.max_depth });
      return { namespaces: all.slice(q.offset, q.offset + q.limit) };
    },
  };
}
export type StoreService = ReturnType<typeof createStoreService>;
