import { defineTool } from '@rein/define/internal';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelGateway } from '../src/adapters/model/model-gateway.js';
import { CircuitBreakers } from '../src/adapters/resilience/circuit-breakers.js';
import { FleetLimit } from '../src/adapters/resilience/fleet-limit.js';
import { createResilientModelGateway } from '../src/adapters/resilience/resilient-model.js';
import { contextPolicySchema } from '../src/policy/step/context-policy.js';
import { ModelUnavailableError } from '../src/shared/errors.js';
import { fleetLimitKey, runKeys } from '../src/shared/keys.js';
import { createMetrics } from '../src/shared/metrics.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { type Harness, harnessPerTest, readsProcessed } from './harness.js';

// A server per file (harnessPerTest): the read count is server-wide.
const use = harnessPerTest();

const search = (q: string) => ({ toolCalls: [toolCall(`c-${q}`, 'search_policy', { query: q })] });
const LEASES = fleetLimitKey('model:fake-model');

/**
 * The worker's model gateway (breakers, bulkheads, the fleet limit) over a scripted model,
 * on the harness's own connection, as a worker shares one connection between them.
 */
function withGateway(turns: Parameters<typeof createFakeModel>[0], opts: Parameters<typeof use>[1] = {}, fleetConcurrency = 4) {
  const fake = createFakeModel(turns);
  let gateway: ModelGateway | undefined;
  const bound = () => gateway as ModelGateway;
  const t: Harness = use({ complete: (r) => bound().complete(r), lease: (ms) => bound().lease?.(ms) }, { ...opts, workerConnection: true });
  const options = {
    errorThresholdPercentage: 50,
    resetTimeoutMs: 1000,
    volumeThreshold: 5,
    rollingCountTimeoutMs: 10_000,
    probeTimeoutMs: 5_000,
    fleetWorkers: 1,
  };
  gateway = createResilientModelGateway(['fake-model'], (_model, request) => fake.complete(request), {
    breakers: new CircuitBreakers(t.redis, options, pino({ level: 'silent' }), createMetrics('gw')),
    fleetLimit: new FleetLimit(t.redis),
    metrics: createMetrics('gw'),
    processConcurrency: 4,
    maxWaitMs: 100,
    fleetConcurrency,
  });
  return { t, fake };
}

const startedSteps = async (t: Harness, runId: string) =>
  (await t.store.readEvents(runId, '0')).filter((e) => e.event.type === 'step.started').map((e) => e.event.step);

describe('the round trips of a step', () => {
  it('waits on three Redis round trips before it hands over the next step: the read (with the lease and step.started), the journal, the commit', async () => {
    const { t, fake } = withGateway([search('returns'), search('refunds'), { content: 'done' }]);
    const id = await t.submit('hello');
    await t.drain(1); // the first step also starts the run
    const before = await readsProcessed(t.redis);
    expect(await t.drain(1)).toBe(1);
    // Three for the step, one for the INFO that counts them; the next step is enqueued after the commit.
    expect((await readsProcessed(t.redis)) - before).toBe(4);
    expect(t.queue.map((q) => q.job)).toEqual([expect.objectContaining({ runId: id, step: 2 })]);
    expect(fake.requests).toHaveLength(2);
    // The lease went back, and step.started went out once per step.
    expect(await t.redis.zcard(LEASES)).toBe(0);
    expect(await startedSteps(t, id)).toEqual([0, 1]);
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'done' });
  });

  it('gives the lease back when the run is not runnable, and sends no event to a run that is gone', async () => {
    const { t, fake } = withGateway([search('returns'), { content: 'done' }], {}, 1);
    const id = await t.submit('hello');
    await t.drain(1);
    // A late duplicate of the committed step: skipped, its lease given back (at a fleet limit of one, the next step needs it).
    await t.enqueue('step', { runId: id, step: 0, tenantId: 'acme' });
    await t.steps.process({ runId: id, step: 0, tenantId: 'acme' });
    expect(await t.redis.zcard(LEASES)).toBe(0);
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'done' });
    expect(fake.requests).toHaveLength(2);
    // A job of a run that does not exist: nothing kept, and its event stream is not made.
    expect(await t.steps.process({ runId: 'no-such-run', step: 3, tenantId: 'acme' })).toBe('skipped');
    expect(await t.redis.exists(runKeys('no-such-run').events)).toBe(0);
    expect(await t.redis.zcard(LEASES)).toBe(0);
  });

  it('gives the lease back before acting on a journaled reply, whose tools may take long', async () => {
    let leasesWhileTheToolRan = -1;
    const { t } = withGateway([search('returns'), { content: 'done' }], {}, 1);
    const id = await t.submit('hello');
    // The model answered step 0 and the reply was journaled, then the worker died before the commit.
    await t.journal.record(id, {
      schemaVersion: 1,
      step: 0,
      model: 'fake-model',
      content: null,
      toolCalls: [toolCall('c-1', 'search_policy', { query: 'returns' })],
      usage: { promptTokens: 10, completionTokens: 1 },
      maxTokens: 100,
      durationMs: 1,
      createdAt: new Date().toISOString(),
    });
    const tool = t.tools.get('search_policy');
    if (!tool) throw new Error('no search_policy');
    const execute = tool.execute.bind(tool);
    tool.execute = async (...args) => {
      leasesWhileTheToolRan = await t.redis.zcard(LEASES);
      return execute(...args);
    };
    await t.drain(1);
    expect(leasesWhileTheToolRan).toBe(0);
  });

  it('is refused before its model call while the fleet is at its limit, and runs once a lease is free', async () => {
    const { t, fake } = withGateway([{ content: 'done' }], {}, 1);
    const id = await t.submit('hello');
    await t.redis.zadd(LEASES, Date.now() + 60_000, 'another-worker');
    await expect(t.steps.process({ runId: id, step: 0, tenantId: 'acme' })).rejects.toBeInstanceOf(ModelUnavailableError);
    expect(fake.requests).toHaveLength(0);
    expect(await t.journal.get(id, 0)).toBeNull();
    await t.redis.zrem(LEASES, 'another-worker');
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'done' });
    expect(await t.redis.zcard(LEASES)).toBe(0);
  });

  it('gives the lease back before a model-written summary, whose call needs one of its own at a fleet limit of one', async () => {
    const report = defineTool({
      name: 'big_report',
      description: 'A long report.',
      kind: 'read',
      parameters: z.object({ part: z.number() }),
      execute: ({ part }) => ({ part, rows: Array.from({ length: 200 }, (_, i) => `row ${i} of part ${part}`) }),
    });
    const context = contextPolicySchema.parse({ toolResultMaxChars: 300, historyTokens: 600, summarize: 'model' });
    let summaries = 0;
    const replies = [1, 2, 3, 4, 5].map((part) => ({ toolCalls: [toolCall(`c${part}`, 'big_report', { part })] }));
    const { t } = withGateway(
      [
        (req) => {
          if ((req.messages[0]?.content ?? '').startsWith('You summarise')) return { content: `SUMMARY-${++summaries}` };
          return replies.shift() ?? { content: 'done' };
        },
      ],
      { extraTools: [report], profile: { context, limits: { maxSteps: 10, maxTokens: 20_000, timeoutMs: 60_000 } } },
      1,
    );
    const id = await t.submit('reports please', undefined, { maxTokens: 20_000 });
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'done' });
    expect(summaries).toBeGreaterThan(0);
    expect(await t.redis.zcard(LEASES)).toBe(0);
  });

  it("gives the lease back when the agent's own model comes first, and the call takes that model's", async () => {
    const { t, fake } = withGateway([{ content: 'done' }], { profile: { models: ['own-model'] } }, 1);
    const id = await t.submit('hello');
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'done' });
    expect(fake.requests[0]?.models).toEqual(['own-model']);
    expect(await t.redis.zcard(LEASES)).toBe(0);
    expect(await t.redis.zcard(fleetLimitKey('model:own-model'))).toBe(0);
  });
});
