import { z } from 'zod';
import type { Page, PageCursor, PageQuery } from '../../policy/ports/pages.js';
import { InvalidRequestError } from '../../shared/errors.js';
import type { RedisClient } from './redis.js';

const cursorSchema: z.ZodType<PageCursor> = z.object({ at: z.number(), id: z.string().min(1) });

export const encodeCursor = (c: PageCursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

export function decodeCursor(raw: string): PageCursor {
  try {
    return cursorSchema.parse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
  } catch {
    throw new InvalidRequestError('cursor is not one this API handed out', 'invalid_cursor');
  }
}

const BATCH = 200;
/** Index entries one page may walk past; a sparse match returns a short page with a cursor instead of scanning on. */
const SCAN_CAP = 5_000;

/**
 * Pages newest-first through the intersection of sorted-set indexes (member = id,
 * score = creation ms). It walks the smallest index and keeps members that every other
 * index holds (ZMSCORE), so a filtered page reads index entries, never the records.
 * Members sharing a score are ordered by id, which makes the cursor exact.
 */
export async function pageIndexes(redis: RedisClient, keys: string[], q: PageQuery): Promise<Page> {
  const cards = await Promise.all(keys.map((k) => redis.zcard(k)));
  const order = keys.map((k, i) => ({ k, n: cards[i] ?? 0 })).sort((a, b) => a.n - b.n);
  const [driver, ...others] = order.map((o) => o.k);
  if (!driver || (order[0]?.n ?? 0) === 0) return { ids: [] };
  const max = q.cursor ? String(q.cursor.at) : q.before !== undefined ? `(${q.before}` : '+inf';
  const min = q.after !== undefined ? `(${q.after}` : '-inf';
  const kept: PageCursor[] = [];
  let last: PageCursor | undefined;
  for (let offset = 0; offset < SCAN_CAP; offset += BATCH) {
    const flat = await redis.zrange(driver, max, min, 'BYSCORE', 'REV', 'LIMIT', offset, BATCH, 'WITHSCORES');
    const batch: PageCursor[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const entry = { id: flat[i] as string, at: Number(flat[i + 1]) };
      if (q.cursor && entry.at === q.cursor.at && entry.id >= q.cursor.id) continue; // handed out already
      batch.push(entry);
    }
    const held = others.length
      ? await membership(
          redis,
          others,
          batch.map((e) => e.id),
        )
      : batch.map(() => true);
    for (const [i, entry] of batch.entries()) {
      if (held[i] && kept.length === q.limit) return { ids: kept.map((e) => e.id), next: kept[kept.length - 1] };
      last = entry;
      if (held[i]) kept.push(entry);
    }
    if (flat.length < BATCH * 2) return { ids: kept.map((e) => e.id) }; // the driver index is exhausted
  }
  return { ids: kept.map((e) => e.id), ...(last ? { next: last } : {}) };
}

async function membership(redis: RedisClient, keys: string[], ids: string[]): Promise<boolean[]> {
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const k of keys) pipeline.zmscore(k, ...ids);
  const replies = (await pipeline.exec()) ?? [];
  return ids.map((_, i) => replies.every(([, scores]) => (scores as Array<string | null>)[i] !== null));
}
