import { describe, expect, it } from 'vitest';
import { listRunsQuerySchema, usageQuerySchema } from '../src/api.js';

describe('queries that reach the run archive hold only what PostgreSQL takes', () => {
  it('a search with a NUL in its text or filters, or an instant outside years 1–9999, is refused', () => {
    for (const bad of [
      { q: 'a\u0000b' },
      { agent: 'x\u0000' },
      { userId: '\u0000' },
      { from: '0000-06-01T00:00:00Z' },
      { to: '0000-12-31T23:59:59Z' },
      { createdAfter: '0000-01-01T00:00:00Z' },
      // Past 9999 in UTC, written with an offset.
      { to: '9999-12-31T23:00:00-05:00' },
    ])
      expect(listRunsQuerySchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    expect(listRunsQuerySchema.parse({ q: '张三', from: '0001-01-01T00:00:00Z', to: '9999-12-31T23:59:59Z' })).toMatchObject({
      q: '张三',
      from: Date.parse('0001-01-01T00:00:00Z'),
    });
  });

  it('usage takes its window bounded the same way, either bound left out, and refuses one that ends before it starts', () => {
    expect(usageQuerySchema.safeParse({ from: '0000-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }).success).toBe(false);
    expect(usageQuerySchema.safeParse({ from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }).success).toBe(false);
    expect(usageQuerySchema.parse({})).toEqual({ groupBy: 'day' });
    expect(usageQuerySchema.parse({ to: '2026-01-01T00:00:00Z' })).toEqual({ to: '2026-01-01T00:00:00Z', groupBy: 'day' });
  });
});
