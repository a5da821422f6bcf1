import { describe, expect, it } from 'vitest';
import { argumentsFor } from '../src/any-tools.js';
import { followPlan, planRequest, writePlan } from '../src/plan.js';
import { playOrderAssistant, type ScriptMessage } from '../src/script.js';

const ORDER_TOOLS = ['query_order', 'search_policy', 'create_ticket', 'update_order_note'].map((name) => ({ name }));
const planFormat = (maxItems: number) => ({
  type: 'json_schema',
  json_schema: { name: 'plan', schema: { properties: { steps: { maxItems } } } },
});

describe('the scripted model in plan mode', () => {
  it('recognises a plan request by its response_format', () => {
    expect(planRequest(planFormat(4))).toEqual({ maxSteps: 4 });
    expect(planRequest({ type: 'json_object' })).toBeNull();
    expect(planRequest(undefined)).toBeNull();
  });

  it('plans a late-order complaint as look-up, policy, ticket, within maxSteps', () => {
    const input = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
    const plan = JSON.parse(writePlan(input, ORDER_TOOLS, 6, (t) => argumentsFor(t, input)).content ?? '');
    expect(plan.steps.map((s: { action: string }) => s.action)).toEqual(['query_order', 'search_policy', 'create_ticket']);
    expect(plan.steps[2]).toMatchObject({ step: 3, risk: 'high', args: { orderNo: '2024001', priority: 'high' } });
    expect(JSON.parse(writePlan(input, ORDER_TOOLS, 2, (t) => argumentsFor(t, input)).content ?? '').steps).toHaveLength(2);
  });

  it('carries out the steps Rein repeats, as edited, one per turn, then hands back to the script', () => {
    const steps = [
      { step: 1, action: 'query_order', args: { orderNo: '2024001' } },
      { step: 2, action: 'create_ticket', args: { orderNo: '2024001', suggestedAction: 'edited' } },
    ];
    const messages: ScriptMessage[] = [
      { role: 'user', content: 'complaint 2024001' },
      { role: 'assistant', content: '{"steps":[]}' },
      {
        role: 'system',
        content: `Your plan was approved by lisi with edits by lisi. Carry out exactly these steps: ${JSON.stringify(steps)}`,
      },
    ];
    expect(followPlan(messages)?.toolCalls).toEqual([{ name: 'query_order', arguments: { orderNo: '2024001' } }]);
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'query_order', arguments: '{}' } }] });
    messages.push({ role: 'tool', tool_call_id: 'c1', content: '{}' });
    expect(followPlan(messages)?.toolCalls).toEqual([{ name: 'create_ticket', arguments: steps[1]?.args }]);
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: 'c2', function: { name: 'create_ticket', arguments: '{}' } }] });
    expect(followPlan(messages)).toBeNull();
  });

  it('answers without acting when the plan was not approved', () => {
    const reply = followPlan([
      { role: 'user', content: 'complaint 2024001' },
      { role: 'system', content: 'Your plan was not approved (rejected by lisi: no). Do not carry it out.' },
    ]);
    expect(reply).toMatchObject({ toolCalls: [], content: expect.stringMatching(/not approved/) });
  });
});

describe('the scripted model with summarised results', () => {
  const summary = (fields: Record<string, unknown>) =>
    `<tool_result name="query_order">\n${JSON.stringify({ summarized: true, handle: '0:c0', chars: 4000, fields })}\n</tool_result>`;
  const opened = (input: string, fields: Record<string, unknown>): ScriptMessage[] => [
    { role: 'user', content: input },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c0', function: { name: 'query_order', arguments: '{"orderNo":"2024010"}' } }] },
    { role: 'tool', tool_call_id: 'c0', content: summary(fields) },
  ];

  it('works from the key fields when they hold what it needs', () => {
    const reply = playOrderAssistant(
      opened('Check order 2024010 and tell me whether I can return it', { status: 'shipped', amount: 18600, items: 'array(48)' }),
    );
    expect(reply.toolCalls.map((c) => c.name)).toEqual(['search_policy']);
  });

  it('reads the full result once when it needs what the summary only counts', () => {
    const messages = opened('What items are in order 2024010?', { status: 'shipped', items: 'array(2)' });
    expect(playOrderAssistant(messages).toolCalls).toEqual([{ name: 'read_result', arguments: { handle: '0:c0' } }]);
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', function: { name: 'read_result', arguments: '{"handle":"0:c0"}' } }],
    });
    messages.push({
      role: 'tool',
      tool_call_id: 'c1',
      content: `<tool_result name="read_result">\n${JSON.stringify({ orderNo: '2024010', items: ['a chair', 'a desk'] })}\n</tool_result>`,
    });
    const answer = playOrderAssistant(messages);
    expect(answer.toolCalls).toEqual([]);
    expect(answer.content).toMatch(/2 item\(s\); the first: a chair; a desk/);
  });
});
