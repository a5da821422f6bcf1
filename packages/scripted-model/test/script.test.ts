import { describe, expect, it } from 'vitest';
import { argumentsFor, type OfferedTool, playAnyTools } from '../src/any-tools.js';
import { playOrderAssistant, type ScriptMessage } from '../src/script.js';

/** Plays a conversation: feeds each requested tool call the given observation and asks again. */
function play(input: string, observe: (name: string, args: Record<string, unknown>) => unknown, maxTurns = 8) {
  const messages: ScriptMessage[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: input },
  ];
  const calls: Array<{ name: string; args: Record<string, unknown> }[]> = [];
  for (let turn = 0; turn < maxTurns; turn++) {
    const reply = playOrderAssistant(messages);
    if (reply.toolCalls.length === 0) return { calls, answer: reply.content ?? '' };
    calls.push(reply.toolCalls.map((c) => ({ name: c.name, args: c.arguments })));
    const withIds = reply.toolCalls.map((c, i) => ({
      id: `c${turn}_${i}`,
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
    messages.push({ role: 'assistant', content: reply.content, tool_calls: withIds });
    for (const [i, c] of reply.toolCalls.entries()) {
      const result = observe(c.name, c.arguments);
      messages.push({
        role: 'tool',
        tool_call_id: withIds[i]?.id ?? '',
        content: typeof result === 'string' ? result : JSON.stringify(result),
      });
    }
  }
  throw new Error('the script did not finish');
}

const late = { orderNo: '2024001', customer: '张三', status: 'not_shipped', amount: 899, daysOverdue: 14 };
const shipped = { orderNo: 'A12345', customer: '李四', status: 'shipped', amount: 259, daysOverdue: 0 };
const policies = {
  late: [
    { id: 'P-001', title: '超时发货处理规范 (Late shipment handling)', content: '超 7 天未发货，按订单金额 5% 补偿，最高 50 元。 Late...' },
  ],
  returns: [{ id: 'P-002', title: '7 天无理由退货 (7-day no-reason returns)', content: '签收后 7 天内支持无理由退货。 Within 7 days...' }],
  shipped: [
    {
      id: 'P-004',
      title: '已发货订单退货退款 (Returns after shipment)',
      content: '已发货订单需先拒收或签收后申请退货。 A shipped order...',
    },
  ],
};
const backOffice = (name: string, args: Record<string, unknown>) => {
  if (name === 'query_order') return args.orderNo === 'A12345' ? shipped : late;
  if (name === 'search_policy')
    return /发货|late/.test(String(args.query)) && !/已发货|after/.test(String(args.query))
      ? policies.late
      : /已发货|after/.test(String(args.query))
        ? policies.shipped
        : policies.returns;
  if (name === 'create_ticket') return { ticketId: 'T20260315001', status: 'created' };
  return `Tool "${name}" is not available to this agent.`;
};

describe('scripted order assistant', () => {
  it('plays the late-order trace: query_order → search_policy → create_ticket → answer citing the policy', () => {
    const { calls, answer } = play('客户张三投诉订单 2024001 一直没发货，帮他处理一下', backOffice);
    expect(calls.map((c) => c.map((x) => x.name))).toEqual([['query_order'], ['search_policy'], ['create_ticket']]);
    expect(calls[2]?.[0]?.args).toMatchObject({ orderNo: '2024001', priority: '高', suggestedAction: '补偿 44.95 元并催促仓库发货' });
    expect(answer).toContain('T20260315001');
    expect(answer).toContain('《超时发货处理规范》');
    expect(answer).toContain('44.95');
  });

  it('answers a pure policy question with search_policy only', () => {
    const { calls, answer } = play('支持 7 天无理由退货吗？', backOffice);
    expect(calls.map((c) => c.map((x) => x.name))).toEqual([['search_policy']]);
    expect(answer).toContain('7 天无理由退货');
  });

  it('checks order status, then the matching policy', () => {
    const { calls, answer } = play('查订单 A12345 状态，按政策说能否退', backOffice);
    expect(calls.map((c) => c.map((x) => x.name))).toEqual([['query_order'], ['search_policy']]);
    expect(calls[1]?.[0]?.args.query).toContain('已发货');
    expect(answer).toContain('已发货');
  });

  it('asks for a tool that does not exist when told to delete an order, then declines', () => {
    const { calls, answer } = play('把订单 A12345 删掉', backOffice);
    expect(calls.map((c) => c.map((x) => x.name))).toEqual([['delete_order']]);
    expect(answer).toMatch(/无法删除/);
  });

  it('speaks English to English prompts', () => {
    const { calls, answer } = play('Customer Zhang San complains that order 2024001 has not shipped yet', backOffice);
    expect(calls.map((c) => c[0]?.name)).toEqual(['query_order', 'search_policy', 'create_ticket']);
    expect(answer).toMatch(/^Created high-priority ticket T20260315001/);
    expect(play('Do you support 7-day no-reason returns?', backOffice).calls).toEqual([
      [{ name: 'search_policy', args: { query: 'Do you support 7-day no-reason returns?' } }],
    ]);
  });

  it('looks up several orders with parallel tool calls in one reply', () => {
    const { calls } = play('对比订单 2024001 和 A12345', backOffice);
    expect(calls[0]?.map((c) => c.args.orderNo)).toEqual(['2024001', 'A12345']);
  });

  it('asks the refunds agent about several orders with parallel call_refunds calls, then reports each', () => {
    const input = 'Ask the refunds agent about late orders 2024001 and A12345';
    const first = playOrderAssistant([{ role: 'user', content: input }], ['call_refunds']);
    expect(first.toolCalls.map((c) => [c.name, c.arguments.input])).toEqual([
      ['call_refunds', 'refund the late-shipment compensation on order 2024001'],
      ['call_refunds', 'refund the late-shipment compensation on order A12345'],
    ]);
    const ids = first.toolCalls.map((c, i) => ({ id: `c${i}`, function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
    const reported = playOrderAssistant(
      [
        { role: 'user', content: input },
        { role: 'assistant', content: first.content, tool_calls: ids },
        { role: 'tool', tool_call_id: 'c0', content: 'Refunded 44.95.' },
        { role: 'tool', tool_call_id: 'c1', content: JSON.stringify({ error: 'subagent_failed', reason: 'cancelled' }) },
      ],
      ['call_refunds'],
    );
    expect(reported.content).toBe(
      'The refunds agent reports: Refunded 44.95. The refunds agent could not refund order A12345; a person will follow up.',
    );
  });

  it('says the ticket was not created when the approval was rejected', () => {
    const { answer } = play('客户张三投诉订单 2024001 一直没发货', (name, args) =>
      name === 'create_ticket' ? 'Not executed: rejected by lisi: 补偿过高' : backOffice(name, args),
    );
    expect(answer).toContain('工单未创建');
    expect(answer).toContain('rejected by lisi: 补偿过高');
  });

  it('says the ticket was created when an approver edited its arguments (the result follows the edit note)', () => {
    const { answer } = play('客户张三投诉订单 2024001 一直没发货', (name, args) =>
      name === 'create_ticket'
        ? `Approved by lisi with edited arguments {"priority":"low"} (you proposed {"priority":"high"}). Result: ${JSON.stringify(backOffice(name, args))}`
        : backOffice(name, args),
    );
    expect(answer).toContain('已为订单 2024001 创建加急工单 T20260315001');
    expect(answer).not.toContain('工单未创建');
  });
});

describe('the generic rule for any app', () => {
  const tools: OfferedTool[] = [
    { name: 'lookup_greeting', parameters: { properties: { name: { type: 'string', maxLength: 20 } }, required: ['name'] } },
    {
      name: 'send_greeting',
      parameters: {
        properties: { to: { type: 'string' }, times: { type: 'integer' }, tone: { enum: ['warm', 'dry'] }, note: { type: 'string' } },
        required: ['to', 'times', 'tone'],
      },
    },
  ];
  it('calls each offered tool once, in order, with arguments from the input, then answers with the last result', () => {
    const messages: ScriptMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'Greet "Ada Lovelace" please' },
    ];
    const first = playAnyTools(messages, tools);
    expect(first.toolCalls).toEqual([{ name: 'lookup_greeting', arguments: { name: 'Ada Lovelace' } }]);
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: 'a', function: { name: 'lookup_greeting', arguments: '{}' } }] });
    messages.push({ role: 'tool', tool_call_id: 'a', content: '"Hello"' });
    const second = playAnyTools(messages, tools);
    expect(second.toolCalls).toEqual([{ name: 'send_greeting', arguments: { to: 'Ada Lovelace', times: 1, tone: 'warm' } }]);
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: 'b', function: { name: 'send_greeting', arguments: '{}' } }] });
    messages.push({ role: 'tool', tool_call_id: 'b', content: '<tool_result name="send_greeting">\n{"sent":true}\n</tool_result>' });
    const done = playAnyTools(messages, tools);
    expect(done.toolCalls).toEqual([]);
    expect(done.content).toContain('not an LLM');
    expect(done.content).toContain('{"sent":true}');
  });
});

describe('arguments the generic rule makes up', () => {
  it('fills only required parameters: read_text_file gets a path, never head and tail at once', () => {
    const readTextFile: OfferedTool = {
      name: 'read_text_file',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, head: { type: 'number' }, tail: { type: 'number' } },
        required: ['path'],
      },
    };
    expect(argumentsFor(readTextFile, 'Read "notes/todo.md" for me')).toEqual({ path: 'notes/todo.md' });
    expect(argumentsFor({ name: 'list', parameters: { properties: { limit: { type: 'integer' } } } }, 'x')).toEqual({});
  });

  it('fits each value to its schema: enum, bounds, lengths, formats, minItems, nested objects', () => {
    const tool: OfferedTool = {
      name: 't',
      parameters: {
        properties: {
          from: { type: 'string' },
          to: { type: 'string' },
          mode: { enum: ['fast', 'slow'] },
          page: { type: 'integer', minimum: 3, maximum: 9 },
          ratio: { type: 'number', maximum: 0.5 },
          rank: { type: 'integer', exclusiveMinimum: 4 },
          code: { type: 'string', minLength: 6, maxLength: 8 },
          email: { type: 'string', format: 'email' },
          site: { type: 'string', format: 'uri' },
          day: { type: 'string', format: 'date' },
          tags: { type: 'array', items: { type: 'string', maxLength: 2 }, minItems: 2 },
          owner: { type: ['object', 'null'], properties: { id: { type: 'integer' }, extra: { type: 'string' } }, required: ['id'] },
        },
        required: ['from', 'to', 'mode', 'page', 'ratio', 'rank', 'code', 'email', 'site', 'day', 'tags', 'owner'],
      },
    };
    expect(argumentsFor(tool, 'Copy "a.txt" to "b.txt"')).toEqual({
      from: 'a.txt',
      to: 'b.txt',
      mode: 'fast',
      page: 3,
      ratio: 0.5,
      rank: 5,
      code: 'b.txtx',
      email: 'someone@example.com',
      site: 'https://example.com/',
      day: '2024-01-01',
      tags: ['b.', 'b.'],
      owner: { id: 1 },
    });
  });

  it('stays small whatever a schema asks for', () => {
    const greedy: OfferedTool = {
      name: 'g',
      parameters: {
        properties: { s: { type: 'string', minLength: 1e9 }, a: { type: 'array', minItems: 1e9, items: { type: 'integer' } } },
        required: ['s', 'a'],
      },
    };
    const args = argumentsFor(greedy, 'x') as { s: string; a: number[] };
    expect(args.s.length).toBe(10_000);
    expect(args.a.length).toBe(100);
  });
});

describe('sessions', () => {
  it('answers the current turn (the last user message) and can recall the earlier ones', () => {
    const messages: ScriptMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'What is your return policy?' },
      { role: 'assistant', content: 'Seven days, no reason needed.' },
      { role: 'user', content: 'What did I ask before?' },
    ];
    const reply = playOrderAssistant(messages);
    expect(reply.toolCalls).toEqual([]);
    expect(reply.content).toContain('Earlier you asked: "What is your return policy?"');
  });

  it('says so when there is nothing to recall', () => {
    const reply = playOrderAssistant([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'What did I ask before?' },
    ]);
    expect(reply.content).toContain('start of our conversation');
  });

  it('does not take an earlier turn for the current one', () => {
    const reply = playOrderAssistant([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'Please delete order 2024001' },
      { role: 'assistant', content: 'I cannot delete orders.' },
      { role: 'user', content: 'Hello' },
    ]);
    expect(reply.toolCalls).toEqual([]);
    expect(reply.content).toContain('scripted demo model');
  });
});
