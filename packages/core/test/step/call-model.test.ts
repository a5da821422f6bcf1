import type { ChatMessage, Decision, RunEvent, Snapshot } from '@rein/contract';
import { AgentCatalog, type AgentProfile, defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelGateway, ModelReply, ModelRequest } from '../../src/adapters/model/model-gateway.js';
import type { DecisionJournal } from '../../src/adapters/redis/decision-journal.js';
import type { RunStore } from '../../src/adapters/redis/run-store.js';
import { ModelReplyInvalidError } from '../../src/shared/errors.js';
import { createMetrics } from '../../src/shared/metrics.js';
import { createAgentViews } from '../../src/step/agent-views.js';
import { type CallModelDeps, callModel } from '../../src/step/call-model.js';
import { clock, NOW, run, silentLogger, slice } from './support.js';

/**
 * Call the model (step/call-model.ts): one call within the run's budget and deadline, its reply
 * journaled (with what was sent) before anything acts on it; a reply that cannot be read is
 * journaled never, and the step's job sees the error.
 */

/** A read tool behind the breaker of the database it shares with others. */
const lookup: Tool = {
  ...defineTool({
    name: 'lookup',
    description: 'read an order',
    kind: 'read',
    parameters: z.object({ orderNo: z.string() }),
    execute: () => ({}),
  }),
  dependency: 'orders-db',
};
const tools = new Map<string, Tool>([[lookup.name, lookup]]);
const profile = {
  name: 'order-assistant',
  instructions: 'Be brief.',
  tools: ['lookup'],
  maxCompletionTokens: 500,
} as unknown as AgentProfile;
const history: ChatMessage[] = [{ role: 'user', content: 'where is order 7?' }];

/** The slice callModel takes: the model answers `reply` (or throws it), the journal keeps what it is given. */
function deps(reply: Partial<ModelReply> | Error, opts: { onDelta?: (request: ModelRequest) => void } = {}) {
  const requests: ModelRequest[] = [];
  const journaled: Array<{ decision: Decision; snapshot: Snapshot; reads: number }> = [];
  const events: RunEvent[] = [];
  const metrics = createMetrics('test');
  const model = slice<ModelGateway>('model', {
    async complete(request) {
      requests.push(request);
      opts.onDelta?.(request);
      if (reply instanceof Error) throw reply;
      return { model: 'm', content: null, toolCalls: [], usage: { promptTokens: 100, completionTokens: 10 }, ...reply };
    },
  });
  const d: CallModelDeps = {
    store: slice<RunStore>('store', {
      async appendEvent(e) {
        events.push(e);
      },
    }),
    journal: slice<DecisionJournal>('journal', {
      async recordWithSnapshot(_runId, decision, snapshot, o = {}) {
        journaled.push({ decision, snapshot, reads: o.reads?.length ?? 0 });
        return { decision, blobs: ['system-hash'], reads: (o.reads ?? []).map(() => null) };
      },
    }),
    model,
    modelName: 'm',
    tools,
    metrics,
    modelTimeoutMs: 30_000,
    views: createAgentViews(tools, new AgentCatalog([profile], profile.name)),
    clock,
  };
  return { d, requests, journaled, events, metrics };
}

describe('call the model', () => {
  it('journals the reply with what was sent before handing it on, and names the snapshot texts on the run', async () => {
    const { d, requests, journaled } = deps({
      content: 'looking',
      toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{"orderNo":"7"}' }],
    });
    const made = await callModel(d, run(), profile, history, silentLogger);
    expect(requests[0]?.messages).toEqual([{ role: 'system', content: 'Be brief.' }, ...history]);
    expect(requests[0]?.tools.map((t) => t.function.name)).toEqual(['lookup']);
    expect(journaled).toHaveLength(1);
    expect(journaled[0]?.decision).toMatchObject({
      step: 2,
      model: 'm',
      content: 'looking',
      toolCalls: [{ id: 'c1', name: 'lookup' }],
      usage: { promptTokens: 100, completionTokens: 10 },
      maxTokens: 500,
      createdAt: clock.iso(),
    });
    expect(journaled[0]?.snapshot.request).toMatchObject({ model: 'm', tools: ['lookup'], maxTokens: 500 });
    expect(made?.decision).toBe(journaled[0]?.decision);
    expect(made?.run.snapshotBlobs).toEqual(['system-hash']);
  });

  it('reads the breaker of each tool the reply calls with the journal write, and of nothing else', async () => {
    const calling = deps({
      toolCalls: [
        { id: 'c1', name: 'lookup', arguments: '{}' },
        { id: 'c2', name: 'nope', arguments: '{}' },
      ],
    });
    const made = await callModel(calling.d, run(), profile, history, silentLogger);
    expect(calling.journaled[0]?.reads).toBe(1);
    expect([...(made?.breakerStates.keys() ?? [])]).toEqual(['orders-db']);
    const answering = deps({ content: 'done' });
    await callModel(answering.d, run(), profile, history, silentLogger);
    expect(answering.journaled[0]?.reads).toBe(0);
  });

  it('asks for no more completion tokens than the budget leaves, and makes no call when the prompt does not fit', async () => {
    const { d, requests } = deps({ content: 'ok' });
    await callModel(d, run(), profile, history, silentLogger, run({ usage: { promptTokens: 0, completionTokens: 0, totalTokens: 9_800 } }));
    expect(requests[0]?.maxTokens).toBeLessThan(200);
    const broke = deps({ content: 'ok' });
    const spent = run({ usage: { promptTokens: 0, completionTokens: 0, totalTokens: 9_990 } });
    expect(await callModel(broke.d, spent, profile, history, silentLogger, spent)).toBeNull();
    expect([broke.requests, broke.journaled]).toEqual([[], []]);
  });

  it("gives the call no more time than the run has left, and says the run's deadline cut it", async () => {
    const { d, requests } = deps({ content: 'ok' });
    await callModel(d, run({ deadlineAt: new Date(NOW + 4_000).toISOString() }), profile, history, silentLogger);
    expect(requests[0]).toMatchObject({ timeoutMs: 4_000, deadlineBound: true });
    const roomy = deps({ content: 'ok' });
    await callModel(roomy.d, run({ deadlineAt: new Date(NOW + 600_000).toISOString() }), profile, history, silentLogger);
    expect(roomy.requests[0]).toMatchObject({ timeoutMs: 30_000, deadlineBound: false });
  });

  it('journals nothing for a malformed reply: its error reaches the job, after the deltas streamed so far', async () => {
    const malformed = new ModelReplyInvalidError('model m sent a malformed completion: choices missing');
    const { d, journaled, events, metrics } = deps(malformed, { onDelta: (request) => request.onDelta?.({ content: 'half a rep' }) });
    await expect(callModel(d, run(), profile, history, silentLogger)).rejects.toBe(malformed);
    expect(journaled).toEqual([]);
    expect(events.map((e) => [e.type, e.data.text])).toEqual([['model.delta', 'half a rep']]);
    const observed = (await metrics.modelDuration.get()).values.filter((v) => v.metricName?.endsWith('_count'));
    expect(observed.map((v) => v.labels.outcome)).toEqual(['model_reply_invalid']);
  });

  it('charges what a reply really took when the endpoint under-reports it', async () => {
    const { d, journaled } = deps({ content: 'x'.repeat(4_000), usage: { promptTokens: 1, completionTokens: 1 } });
    await callModel(d, run(), profile, history, silentLogger);
    expect(journaled[0]?.decision.usage.completionTokens).toBeGreaterThan(1);
  });
});
