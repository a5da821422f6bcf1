import type { RunView } from '@rein/client';
import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const QUESTION = 'What is your return policy?';
const quota = { tokensPerDay: 5_000_000, costPerDayUsd: 100 };

/** One worker taking two steps at a time; the heavy tenant may run two at once and queues beyond. */
const fleet = fleetPerFile({
  workers: 1,
  modelLatencyMs: 300,
  env: {
    WORKER_CONCURRENCY: '2',
    REIN_TENANT_QUOTAS: JSON.stringify({
      default: { maxConcurrentRuns: 100, ...quota },
      tenants: { [KEYS.user.tenantId]: { maxConcurrentRuns: 2, queueBeyondLimit: true, ...quota } },
    }),
  },
});

describe('fair share between tenants (queueBeyondLimit)', () => {
  it("a flood of one tenant's runs waits in its own line, and another tenant's run is not held up behind it", async () => {
    const heavy = fleet().client(KEYS.user.key);
    const light = fleet().client(KEYS.other.key);
    // Over its limit the heavy tenant gets no 429: its runs are accepted and wait.
    const flood = await Promise.all(Array.from({ length: 16 }, () => heavy.runs.create({ input: QUESTION })));
    expect(flood.every((r) => r.status === 'queued')).toBe(true);
    const single = await light.runs.create({ input: QUESTION });

    let maxActive = 0;
    let heavyDoneWhenLightDone = -1;
    const until = Date.now() + 120_000;
    for (;;) {
      const runs = await Promise.all(flood.map((r) => heavy.runs.get(r.id)));
      const active = runs.filter((r: RunView) => r.status === 'running' || (r.step > 0 && r.status === 'queued')).length;
      maxActive = Math.max(maxActive, active);
      const done = runs.filter((r) => r.status === 'succeeded').length;
      if (heavyDoneWhenLightDone < 0 && (await light.runs.get(single.id)).status === 'succeeded') heavyDoneWhenLightDone = done;
      if (done === flood.length && heavyDoneWhenLightDone >= 0) break;
      if (Date.now() > until) throw new Error(`not done: ${done} of ${flood.length}\n${fleet().logs.slice(-20).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Never more than its limit at once, and every run of the flood ran.
    expect(maxActive).toBeLessThanOrEqual(2);
    // The light tenant's run was done long before the flood: behind at most the heavy tenant's two slots.
    expect(heavyDoneWhenLightDone).toBeLessThanOrEqual(6);
  });
});
