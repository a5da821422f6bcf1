import type { ChatMessage, StepRecord } from '@rein/contract';
import { defineAgent, defineApp, defineTool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { estimatePromptTokens } from '../src/policy/budget/token-estimator.js';
import {
  compactHistory,
  contextPolicySchema,
  observationContent,
  parseHandle,
  READ_RESULT_TOOL,
  structuredSummary,
} from '../src/policy/step/context-policy.js';
import { createReadResultTool } from '../src/policy/step/read-result.js';

/** The context policy as pure functions (no Redis): summaries, handles, compacted history. */

const policy = contextPolicySchema.parse({ toolResultMaxChars: 300, historyTokens: 600 });
const bigOrder = JSON.stringify({
  orderNo: '2024010',
  status: 'shipped',
  amount: 18600,
  items: Array.from({ length: 40 }, (_, i) => `SKU-${i} office chair`),
  customer: { name: 'Qian', email: 'q@example.com' },
});
const unwrap = (content: string) => JSON.parse(/^<tool_result[^>]*>\n([\s\S]*)\n<\/tool_result>$/.exec(content)?.[1] ?? 'null');

describe('structured summaries', () => {
  it('keeps top-level scalars and gives arrays and objects by size and keys', () => {
    expect(structuredSummary(bigOrder)).toEqual({
      orderNo: '2024010',
      status: 'shipped',
      amount: 18600,
      items: 'array(40)',
      customer: 'object(name,email)',
    });
  });

  it('describes a top-level array by its length and its items’ keys, and cuts long text', () => {
    expect(
      structuredSummary(
        JSON.stringify([
          { title: 'a', content: 'b' },
          { title: 'c', content: 'd' },
        ]),
      ),
    ).toEqual({
      length: 2,
      itemKeys: ['title', 'content'],
    });
    expect(String(structuredSummary('x'.repeat(500)).text)).toMatch(/…\(500 chars\)$/);
  });
});

describe('observationContent', () => {
  const record = { id: 'call_0_0', name: 'query_order', observation: bigOrder };

  it('sends a long result as summary + handle under a policy, and verbatim without one', () => {
    const sent = unwrap(observationContent(record, 3, 10_000, policy));
    expect(sent).toMatchObject({ summarized: true, handle: '3:call_0_0', chars: bigOrder.length, fields: { items: 'array(40)' } });
    expect(parseHandle(sent.handle)).toEqual({ step: 3, toolCallId: 'call_0_0' });
    expect(unwrap(observationContent(record, 3, 10_000, undefined))).toEqual(JSON.parse(bigOrder));
  });

  it('leaves short results and read_result’s own output as they are', () => {
    expect(unwrap(observationContent({ ...record, observation: '{"a":1}' }, 3, 10_000, policy))).toEqual({ a: 1 });
    expect(unwrap(observationContent({ ...record, name: READ_RESULT_TOOL }, 3, 10_000, policy))).toEqual(JSON.parse(bigOrder));
  });
});

describe('compactHistory', () => {
  const estimate = (m: ChatMessage[]) => estimatePromptTokens('scripted', m, []);
  const turn = (i: number): ChatMessage[] => [
    {
      role: 'assistant',
      content: `step ${i}`,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'query_order', arguments: `{"orderNo":"${i}"}` } }],
    },
    { role: 'tool', tool_call_id: `c${i}`, content: `result ${i} ${'x'.repeat(600)}` },
  ];
  const history: ChatMessage[] = [{ role: 'user', content: 'check my orders' }, ...turn(1), ...turn(2), ...turn(3)];

  it('replaces the oldest turns by one summary until the estimate fits, keeping the input and the latest turn whole', () => {
    const sent = compactHistory(history, policy, estimate);
    expect(estimate(history)).toBeGreaterThan(600);
    expect(estimate(sent)).toBeLessThan(estimate(history));
    expect(sent[0]).toEqual(history[0]);
    expect(sent[1]?.role).toBe('system');
    expect(sent[1]?.content).toMatch(/query_order\(\{"orderNo":"1"\}\)/);
    expect(sent.slice(-2)).toEqual(turn(3));
    // No tool result is separated from the call that asked for it.
    const calls = new Set(sent.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : [])));
    expect(sent.filter((m) => m.role === 'tool').every((m) => m.role === 'tool' && calls.has(m.tool_call_id))).toBe(true);
  });

  it('sends the history unchanged under the window or without a policy', () => {
    expect(compactHistory(history, undefined, estimate)).toBe(history);
    expect(compactHistory(history, { ...policy, historyTokens: 100_000 }, estimate)).toBe(history);
  });
});

describe('agents with a context policy', () => {
  const tool = defineTool({
    name: 'query_order',
    description: 'Look an order up.',
    kind: 'read',
    parameters: z.object({ orderNo: z.string() }),
    execute: async () => ({}),
  });

  it('get read_result added to their tools, allowed and needing no definition by the app', () => {
    const agent = defineAgent({ name: 'a', instructions: 'x', tools: ['query_order'], context: { toolResultMaxChars: 500 } });
    expect(agent.tools).toEqual(['query_order', READ_RESULT_TOOL]);
    expect(agent.context).toEqual({ toolResultMaxChars: 500, summarize: 'structured' });
    expect(() => defineApp({ agents: [agent], tools: [tool] })).not.toThrow();
    expect(() => defineAgent({ name: 'b', instructions: 'x', tools: [READ_RESULT_TOOL] })).toThrow(/only for agents with a context policy/);
    expect(() => defineApp({ agents: [agent], tools: [tool, { ...tool, name: READ_RESULT_TOOL }] })).toThrow(/Rein's own/);
  });

  it('read_result returns the full text or a slice of the run’s own result, and refuses an unknown handle', async () => {
    const step: StepRecord = {
      schemaVersion: 1,
      index: 2,
      model: 'm',
      thought: null,
      toolCalls: [{ id: 'call_1_0', name: 'query_order', arguments: {}, outcome: 'ok', observation: bigOrder, durationMs: 1 }],
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
      costUsd: 0,
      durationMs: 1,
      finishedAt: '2026-01-01T00:00:00.000Z',
    };
    const asked: Array<[string, number]> = [];
    const readResult = createReadResultTool({
      stepRecord: async (runId, index) => {
        asked.push([runId, index]);
        return index === 2 ? step : null;
      },
    });
    const ctx = { runId: 'r1' } as never;
    expect(await readResult.execute({ handle: '2:call_1_0' }, ctx)).toBe(bigOrder);
    expect(await readResult.execute({ handle: '2:call_1_0', offset: 5, length: 10 }, ctx)).toBe(bigOrder.slice(5, 15));
    await expect(readResult.execute({ handle: '7:call_1_0' }, ctx)).rejects.toMatchObject({ code: 'unknown_handle' });
    await expect(readResult.execute({ handle: 'nonsense' }, ctx)).rejects.toMatchObject({ code: 'unknown_handle' });
    expect(asked.every(([runId]) => runId === 'r1')).toBe(true);
    expect(readResult.approval({}, ctx)).toBeNull();
  });
});
