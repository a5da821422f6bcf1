import { describe, expect, it } from 'vitest';
import { runFootprint } from '../src/adapters/redis/run-footprint.js';
import { runKeys } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

const twoSteps = () =>
  createFakeModel([{ toolCalls: [toolCall('c1', 'search_policy', { query: 'refund' })] }, { content: 'Refunds within 7 days.' }]);

describe('retention of finished runs', () => {
  it('counts what a finished run keeps in Redis towards its tenant, once', async () => {
    const t = use(twoSteps());
    const id = await t.submit('can I get a refund?');
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded' });
    const counted = (await t.metrics.storedBytes.get()).values;
    expect(counted).toHaveLength(1);
    expect(counted[0]?.labels).toEqual({ tenant: USER.tenantId });
    expect(counted[0]?.value).toBe(await runFootprint(t.redis, id));
    expect(counted[0]?.value).toBeGreaterThan(0);
  });

  it("drops a finished run's effect ledger, and a late write of a step never writes it back", async () => {
    const t = use(twoSteps());
    const id = await t.submit('can I get a refund?');
    await t.drain();
    expect(await t.redis.exists(runKeys(id).effects)).toBe(0);
    // A worker still busy with the run when it was cancelled may try to write afterwards.
    expect(await t.ledger.recordResult(id, `${id}:0:late`, 'search_policy', true, '[]')).toBe(false);
    expect(await t.ledger.recordIntent(id, `${id}:0:later`, 'search_policy')).toBe('finished');
    expect(await t.redis.exists(runKeys(id).effects)).toBe(0);
    // An undo of the finished run writes under its own key, with a TTL.
    expect(await t.ledger.recordResult(id, `${id}:comp:0:c`, 'search_policy', true, '[]', 'undo')).toBe(true);
    expect(await t.redis.ttl(runKeys(id).effects)).toBeGreaterThan(0);
  });
});
