import type { Principal } from '@rein/contract';
import { holdsRole } from '../approvals/decision-rights.js';

/**
 * The store's rules (pure): who owns which items, what a well-formed namespace is, how a
 * filter and a text query match, when an item has expired. The two stores (Redis, and
 * PostgreSQL with the archive) keep items; these decide.
 */

/** Whose items a caller reads and writes: the tenant's shared space (admins), else the caller's own. */
export type StoreScope = `tenant` | `user:${string}`;

export const scopeOf = (p: Principal): StoreScope => (holdsRole(p.roles, 'admin') ? 'tenant' : `user:${p.userId}`);

/** An item as stored. `expiresAt` (ms) with `ttlMinutes` when it has a TTL. */
export interface StoredItem {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  ttlMinutes?: number;
  expiresAt?: number;
}

export const MAX_NAMESPACE_DEPTH = 10;
export const MAX_LABEL_LENGTH = 128;
export const MAX_KEY_LENGTH = 512;

/** Why a namespace cannot be stored under, or null: 1–10 labels, none empty, none with a period (the SDK's separator). */
export function namespaceProblem(namespace: readonly string[], allowEmpty = false): string | null {
  if (!allowEmpty && namespace.length === 0) return 'a namespace needs at least one label';
  if (namespace.length > MAX_NAMESPACE_DEPTH) return `a namespace has at most ${MAX_NAMESPACE_DEPTH} labels`;
  for (const label of namespace) {
    if (label.length === 0) return 'a namespace label may not be empty';
    if (label.length > MAX_LABEL_LENGTH) return `a namespace label has at most ${MAX_LABEL_LENGTH} characters`;
    if (label.includes('.')) return `namespace label "${label}" contains a period`;
  }
  return null;
}

/** The address of an item in a tenant's store: its scope, namespace and key, unambiguous (no label holds the separators). */
export const itemAddress = (scope: StoreScope, namespace: readonly string[], key: string) =>
  `${scope}\u0000${namespace.join('\u001f')}\u0000${key}`;

export const startsWith = (namespace: readonly string[], prefix: readonly string[]) =>
  prefix.length <= namespace.length && prefix.every((label, i) => label === '*' || namespace[i] === label);

const endsWith = (namespace: readonly string[], suffix: readonly string[]) =>
  suffix.length <= namespace.length &&
  suffix.every((label, i) => label === '*' || namespace[namespace.length - suffix.length + i] === label);

type Comparable = string | number | boolean | null;
const OPERATORS: Record<string, (a: unknown, b: Comparable) => boolean> = {
  $eq: (a, b) => a === b,
  $ne: (a, b) => a !== b,
  $gt: (a, b) => b !== null && (a as Comparable) !== null && (a as number) > (b as number),
  $gte: (a, b) => b !== null && (a as Comparable) !== null && (a as number) >= (b as number),
  $lt: (a, b) => b !== null && (a as Comparable) !== null && (a as number) < (b as number),
  $lte: (a, b) => b !== null && (a as Comparable) !== null && (a as number) <= (b as number),
};

/** Why a filter cannot be applied, or null: top-level fields, each a value or `{$eq|$ne|$gt|$gte|$lt|$lte: value}`. */
export function filterProblem(filter: Record<string, unknown>): string | null {
  for (const [field, cond] of Object.entries(filter)) {
    if (cond !== null && typeof cond === 'object' && !Array.isArray(cond)) {
      for (const op of Object.keys(cond))
        if (!(op in OPERATORS)) return `filter on ${field}: operator ${op} is not one of ${Object.keys(OPERATORS).join(', ')}`;
    }
  }
  return null;
}

/** Whether an item's value matches a filter (every condition holds; a plain value is `$eq`, compared as JSON). */
export function matchesFilter(value: Record<string, unknown>, filter: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  return Object.entries(filter).every(([field, cond]) => {
    const actual = value[field];
    if (cond !== null && typeof cond === 'object' && !Array.isArray(cond))
      return Object.entries(cond as Record<string, Comparable>).every(([op, b]) =>
        (OPERATORS[op] as (a: unknown, b: Comparable) => boolean)(actual, b),
      );
    return JSON.stringify(actual) === JSON.stringify(cond);
  });
}

/** The text a query is matched against: the value's JSON, lower-cased (the archive's search reads text the same way). */
export const searchableText = (value: Record<string, unknown>) => JSON.stringify(value).toLowerCase();

/** Whether an item matches a text query: every word of it appears in the value's text. */
export function matchesQuery(value: Record<string, unknown>, query: string | undefined): boolean {
  if (!query?.trim()) return true;
  const text = searchableText(value);
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => text.includes(word));
}

export const expired = (item: Pick<StoredItem, 'expiresAt'>, now: number) => item.expiresAt !== undefined && item.expiresAt <= now;

/** The namespaces `listNamespaces` answers (pure): distinct, matching prefix and suffix, cut at `maxDepth`, sorted. */
export function namespacesOf(
  items: Iterable<Pick<StoredItem, 'namespace'>>,
  q: { prefix?: string[] | undefined; suffix?: string[] | undefined; maxDepth?: number | undefined },
): string[][] {
  const seen = new Map<string, string[]>();
  for (const { namespace } of items) {
    if (q.prefix && !startsWith(namespace, q.prefix)) continue;
    if (q.suffix && !endsWith(namespace, q.suffix)) continue;
    const cut = q.maxDepth !== undefined ? namespace.slice(0, q.maxDepth) : namespace;
    seen.set(JSON.stringify(cut), cut);
  }
  return [...seen.values()].sort((a, b) => a.join('.').localeCompare(b.join('.')));
}

/** Where items are kept: Redis (adapters/redis/redis-item-store.ts) or PostgreSQL with the archive (adapters/postgres/pg-item-store.ts). */
export interface ItemStore {
  /** Stores (or replaces) an item; false when the tenant already holds `maxItems` others. */
  put(tenantId: string, scope: StoreScope, item: StoredItem, maxItems: number): Promise<boolean>;
  get(tenantId: string, scope: StoreScope, namespace: readonly string[], key: string): Promise<StoredItem | null>;
  delete(tenantId: string, scope: StoreScope, namespace: readonly string[], key: string): Promise<void>;
  /**
   * Moves an item's expiry to `expiresAt`, only if it is still the item read (the same
   * `updatedAt`): a refresh never brings back an item deleted since, nor undoes a newer put.
   */
  touch(tenantId: string, scope: StoreScope, read: StoredItem, expiresAt: number): Promise<void>;
  /** The scope's items under `prefix` (expired ones included: the caller drops them), narrowed by `query` where the store can. */
  list(tenantId: string, scope: StoreScope, prefix: readonly string[], query?: string): Promise<StoredItem[]>;
}
