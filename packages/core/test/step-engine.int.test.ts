import { defineTool } from '@rein/define/internal';
import { HANDOFF_ANSWER } from '@rein/example-order-assistant';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelGateway } from '../src/adapters/model/model-gateway.js';
import { estimatePromptTokens } from '../src/policy/budget/token-estimator.js';
import { idempotencyKey } from '../src/policy/step/call-identity.js';
import { DEFAULT_MAX_TOOL_RESULT_BYTES } from '../src/shared/config.js';
import { ToolError } from '../src/shared/errors.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { harnessPerTest } from './harness.js';

const use = harnessPerTest();

const harness = (model: ModelGateway | Parameters<typeof createFakeModel>[0]) => use(Array.isArray(model) ? createFakeModel(model) : model);

describe('step engine', () => {
  it('ends in one step when the model answers without tools', async () => {
    const t = harness([{ content: 'We support 7-day returns.' }]);
    const id = await t.submit('hello');
    expect(await t.drain()).toBe(1);
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'succeeded', reason: 'completed', finalAnswer: 'We support 7-day returns.', step: 1 });
    expect(run.usage).toEqual({ promptTokens: 100, completionTokens: 10, totalTokens: 110 });
    expect((await t.store.steps(id)).map((s) => s.toolCalls.length)).toEqual([0]);
  });

  it("sends the agent's own models with every model request", async () => {
    const model = createFakeModel([{ content: 'answer' }]);
    const t = use(model, { profile: { models: ['own-model', 'own-fallback'] } });
    await t.submit('hello');
    await t.drain();
    expect(model.requests[0]?.models).toEqual(['own-model', 'own-fallback']);
  });

  it('shows the model a ToolError as its code and whether trying again can help', async () => {
    const flaky = defineTool({
      name: 'flaky',
      description: 'Sometimes busy.',
      kind: 'read',
      parameters: z.object({}),
      execute: () => {
        throw new ToolError('busy', 'try again in a moment', { retryable: true });
      },
    });
    const t = use(createFakeModel([{ toolCalls: [toolCall('f', 'flaky', {})] }, { content: 'done' }]), { extraTools: [flaky] });
    const id = await t.submit('hello');
    await t.drain();
    const [call] = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(call?.outcome).toBe('error');
    expect(JSON.parse(call?.observation ?? '{}')).toEqual({ error: 'busy', message: 'try again in a moment', retryable: true });
  });

  it('caps a huge tool result before the ledger, the trace and the model see it, saying so', async () => {
    const huge = 'é'.repeat(3_000_000); // 6 MB of UTF-8
    const dump = defineTool({
      name: 'dump',
      description: 'Writes and returns a lot.',
      kind: 'write',
      honoursIdempotencyKey: true,
      parameters: z.object({}),
      execute: () => huge,
    });
    const model = createFakeModel([{ toolCalls: [toolCall('d', 'dump', {})] }, { content: 'done' }]);
    const t = use(model, { extraTools: [dump] });
    const id = await t.submit('hello');
    await t.drain(1);
    const journaled = await t.ledger.get(id, idempotencyKey(id, 0, 'd')); // the terminal commit drops the ledger
    await t.drain();
    const [call] = (await t.store.steps(id))[0]?.toolCalls ?? [];
    const marker = `[tool result truncated: ${Buffer.byteLength(huge)} bytes, the first`;
    expect(Buffer.byteLength(call?.observation ?? '')).toBeLessThanOrEqual(DEFAULT_MAX_TOOL_RESULT_BYTES);
    expect(call?.observation).toContain(marker);
    expect(call?.observation.startsWith('éé')).toBe(true);
    expect(journaled).toMatchObject({ state: 'done', observation: call?.observation });
    // The model sees at most the capped result (here as the agent's context policy summarises it).
    const seen = model.requests[1]?.messages.find((m) => m.role === 'tool');
    expect((seen?.content ?? '').length).toBeLessThan(4000);
  });

  it('keeps a decision snapshot of exactly what was sent and what came back', async () => {
    const model = createFakeModel([{ content: 'answer' }]);
    const t = harness(model);
    const id = await t.submit('hello');
    await t.drain();
    const [snapshot] = await t.journal.snapshots(id);
    expect(snapshot?.request.messages).toEqual(model.requests[0]?.messages);
    expect(snapshot?.request.tools).toContain('query_order');
    expect(snapshot?.reply).toMatchObject({ content: 'answer' });
  });

  it('runs a multi-step chain, feeding each observation back to the model', async () => {
    const model = createFakeModel([
      { content: 'check the order', toolCalls: [toolCall('c1', 'query_order', { orderNo: '2024001' })] },
      { content: 'check the policy', toolCalls: [toolCall('c2', 'search_policy', { query: '超时发货 赔偿' })] },
      { content: 'It is 14 days late; 5% compensation applies.' },
    ]);
    const t = use(model);
    const id = await t.submit('order 2024001 has not shipped');
    await t.drain();
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'succeeded', step: 3, finalAnswer: 'It is 14 days late; 5% compensation applies.' });
    expect(run.usage.totalTokens).toBe(330);
    // The third request carries both observations, each under its tool_call_id.
    const third = model.requests[2]?.messages ?? [];
    const toolMessages = third.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => (m.role === 'tool' ? m.tool_call_id : ''))).toEqual(['c1', 'c2']);
    const data = /^<tool_result name="query_order">\n([\s\S]*)\n<\/tool_result>$/.exec(toolMessages[0]?.content ?? '')?.[1];
    expect(JSON.parse(data ?? '{}')).toMatchObject({ orderNo: '2024001', status: 'not_shipped', daysOverdue: 14 });
    expect(toolMessages[1]?.content).toContain('P-001');
    expect(third[0]).toMatchObject({ role: 'system' });
  });

  it('turns an unknown tool into an observation listing the available tools', async () => {
    const model = createFakeModel([
      { toolCalls: [toolCall('c1', 'delete_order', { orderNo: 'A12345' })] },
      { content: 'Sorry, I cannot delete orders.' },
    ]);
    const t = use(model);
    const id = await t.submit('delete order A12345');
    await t.drain();
    const [step] = await t.store.steps(id);
    expect(step?.toolCalls[0]).toMatchObject({ name: 'delete_order', outcome: 'unknown_tool' });
    expect(step?.toolCalls[0]?.observation).toContain('query_order, search_policy, create_ticket');
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'Sorry, I cannot delete orders.' });
  });

  it('turns invalid JSON and schema mismatches into observations that say what was wrong', async () => {
    const model = createFakeModel([
      { toolCalls: [toolCall('c1', 'query_order', '{"orderNo": '), toolCall('c2', 'query_order', { order: 1 })] },
      { content: 'done' },
    ]);
    const t = use(model);
    const id = await t.submit('check my order');
    await t.drain();
    const calls = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(calls.map((c) => c.outcome)).toEqual(['invalid_arguments', 'invalid_arguments']);
    expect(calls[0]?.observation).toMatch(/not valid JSON/);
    expect(calls[1]?.observation).toMatch(/orderNo/);
    expect((await t.store.require(id)).status).toBe('succeeded');
  });

  it("runs parallel tool calls and keeps the model's order and ids", async () => {
    const model = createFakeModel([
      {
        toolCalls: [
          toolCall('z-last', 'query_order', { orderNo: 'A12345' }),
          toolCall('a-first', 'search_policy', { query: '退货' }),
          toolCall('m-mid', 'query_order', { orderNo: '2024001' }),
        ],
      },
      { content: 'summary' },
    ]);
    const t = use(model);
    const id = await t.submit('compare');
    await t.drain();
    const messages = await t.store.messages(id);
    const toolMessages = messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => (m.role === 'tool' ? m.tool_call_id : ''))).toEqual(['z-last', 'a-first', 'm-mid']);
    expect(toolMessages[0]?.content).toContain('A12345');
    expect(toolMessages[2]?.content).toContain('2024001');
  });

  it('counts a tool call whose tool throws as an error observation, not a crash', async () => {
    const model = createFakeModel([{ toolCalls: [toolCall('c1', 'query_order', { orderNo: 'NOPE999' })] }, { content: 'not found' }]);
    const t = use(model);
    const id = await t.submit('check NOPE999');
    await t.drain();
    const call = (await t.store.steps(id))[0]?.toolCalls[0];
    expect(call).toMatchObject({ outcome: 'error' });
    expect(JSON.parse(call?.observation ?? '{}')).toMatchObject({ error: 'order_not_found' });
  });

  it('stops before the model call once the step limit is reached', async () => {
    const model = createFakeModel([{ toolCalls: [toolCall('c', 'search_policy', { query: '退货' })] }]);
    const t = use(model);
    const id = await t.submit('loop forever', undefined, { maxSteps: 2 });
    await t.drain();
    expect(model.requests).toHaveLength(2);
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'max_steps', step: 2 });
  });

  it('never asks for more completion tokens than the budget has left, and skips a call that cannot fit', async () => {
    const budget = 6000;
    const model = createFakeModel([
      (_req, n) => ({
        toolCalls: [toolCall(`c${n}`, 'search_policy', { query: `退货 ${n}` })],
        usage: { promptTokens: 500, completionTokens: 100 },
      }),
    ]);
    const t = harness(model);
    const id = await t.submit('spend', undefined, { maxTokens: budget });
    await t.drain();
    model.requests.forEach((req, n) => {
      const left = budget - 600 * n - estimatePromptTokens('fake-model', req.messages, req.tools);
      expect(req.maxTokens).toBeGreaterThanOrEqual(16);
      expect(req.maxTokens).toBeLessThanOrEqual(left);
    });
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'failed', reason: 'token_budget', finalAnswer: HANDOFF_ANSWER });
    expect(run.usage.totalTokens).toBeLessThanOrEqual(budget);
    expect(run.usage.totalTokens).toBe(600 * model.requests.length);
  });
});

describe('usage as reported is checked against the reply (issue 24 item 14)', () => {
  const noop = defineTool({ name: 'noop', description: 'Does nothing.', kind: 'read', parameters: z.object({}), execute: () => 'ok' });
  const long = '退'.repeat(20_000); // one token each by Rein's count; no PII pattern can match it

  it('a reply reported as 5 completion tokens is charged Rein’s count, and the gap is counted', async () => {
    const t = use(createFakeModel([{ content: long, usage: { promptTokens: 100, completionTokens: 5 } }]));
    const id = await t.submit('hello');
    await t.drain();
    const run = await t.store.require(id);
    expect(run.usage).toEqual({ promptTokens: 100, completionTokens: 20_000, totalTokens: 20_100 });
    expect((await t.store.steps(id))[0]?.usage.completionTokens).toBe(20_000);
    expect((await t.metrics.modelUsageUnderreported.get()).values).toEqual([{ labels: { model: 'fake-model' }, value: 19_995 }]);
  });

  it('so an under-reporting endpoint cannot spend past the token budget', async () => {
    const model = createFakeModel([
      { content: long, toolCalls: [toolCall('c1', 'noop', {})], usage: { promptTokens: 100, completionTokens: 5 } },
      { content: 'done' },
    ]);
    const t = use(model, { extraTools: [noop] });
    const id = await t.submit('hello', undefined, { maxTokens: 10_000 });
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'token_budget' });
    expect(model.requests).toHaveLength(1);
  });

  it('an honest report is believed even where Rein’s conservative count is higher', async () => {
    const t = use(createFakeModel([{ content: 'a'.repeat(1_500), usage: { promptTokens: 100, completionTokens: 300 } }]));
    const id = await t.submit('hello');
    await t.drain();
    expect((await t.store.require(id)).usage.completionTokens).toBe(300);
    expect((await t.metrics.modelUsageUnderreported.get()).values).toEqual([]);
  });
});
