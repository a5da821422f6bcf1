import { describe, expect, it } from 'vitest';
import { tenantKeys } from '../src/shared/keys.js';
import { createFakeModel } from '../src/testing/index.js';
import { harnessPerTest } from './harness.js';

const use = harnessPerTest();

const usage = (totalTokens: number) => ({ promptTokens: totalTokens, completionTokens: 0, totalTokens });

describe("a tenant's usage charge", () => {
  it('charges a run that spans midnight only what it spent after its charge of the day before', async () => {
    const clock = { at: Date.parse('2026-11-29T23:59:00Z') };
    const t = use(createFakeModel([]), { now: () => clock.at });
    const tokensOn = async (day: string) => Number((await t.redis.hget(tenantKeys('acme').usage(day), 'tokens')) ?? 0);
    const run = { id: 'r-midnight', tenantId: 'acme', createdAt: '2026-11-29T23:58:00.000Z', costUsd: 0 };
    expect(await t.quotas.charge({ ...run, usage: usage(100) })).toBe(100);
    clock.at = Date.parse('2026-11-30T00:01:00Z');
    expect(await t.quotas.charge({ ...run, usage: usage(130) })).toBe(30);
    expect(await t.quotas.charge({ ...run, usage: usage(130) })).toBe(0); // a replay adds nothing
    expect([await tokensOn('2026-11-29'), await tokensOn('2026-11-30')]).toEqual([100, 30]);
    // Both day keys expire (each process sets a day's TTL with its first charge to it).
    expect(await t.redis.ttl(tenantKeys('acme').usage('2026-11-30'))).toBeGreaterThan(86_400);
  });

  it("charges a run begun today in full, whatever yesterday's marks say", async () => {
    const t = use(createFakeModel([]), { now: () => Date.parse('2026-12-02T10:00:00Z') });
    // A mark under the same run id yesterday cannot be this run's: it began today.
    await t.redis.hset(tenantKeys('acme').charged('2026-12-01'), 'r-today', '500:0');
    const run = { id: 'r-today', tenantId: 'acme', createdAt: '2026-12-02T09:59:00.000Z', costUsd: 0 };
    expect(await t.quotas.charge({ ...run, usage: usage(40) })).toBe(40);
    expect(Number(await t.redis.hget(tenantKeys('acme').usage('2026-12-02'), 'tokens'))).toBe(40);
  });
});
