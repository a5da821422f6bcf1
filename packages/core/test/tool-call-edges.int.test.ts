import { defineTool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();

const ticket = (type: string) => ({ orderNo: '2024001', type, priority: 'high', suggestedAction: 'call the customer' });

describe('calls of one reply that share an id', () => {
  it('each get an identity of their own: both approved writes run, none is reported uncertain', async () => {
    const model = createFakeModel([
      { toolCalls: [toolCall('same', 'create_ticket', ticket('late')), toolCall('same', 'create_ticket', ticket('damaged'))] },
      { content: 'done' },
    ]);
    const t = use(model);
    const id = await t.submit('open two tickets');
    await t.drain();
    const pending = await t.store.approvals(id);
    expect(new Set(pending.map((a) => a.toolCallId))).toEqual(new Set(['same', 'same#1']));
    for (const a of pending) await t.approvals.decide(USER, a.id, { kind: 'approve' });
    await t.drain();
    expect((await t.store.require(id)).status).toBe('succeeded');
    const calls = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(calls.map((c) => [c.id, c.outcome])).toEqual([
      ['same', 'ok'],
      ['same#1', 'ok'],
    ]);
    expect((await t.demo.tickets(USER.tenantId, '2024001')).map((x) => x.type).sort()).toEqual(['damaged', 'late']);
    // What the model is shown next pairs each result with its own call.
    const sent = model.requests[1]?.messages ?? [];
    const assistant = sent.find((m) => m.role === 'assistant');
    expect(assistant && 'tool_calls' in assistant ? assistant.tool_calls?.map((c) => c.id) : []).toEqual(['same', 'same#1']);
    expect(sent.filter((m) => m.role === 'tool').map((m) => ('tool_call_id' in m ? m.tool_call_id : ''))).toEqual(['same', 'same#1']);
  });
});

describe('tool results with no JSON form and approval policies that throw', () => {
  const results: Record<string, () => unknown> = {
    function: () => () => 1,
    symbol: () => Symbol('s'),
    'toJSON returning undefined': () => ({ toJSON: () => undefined }),
    bigint: () => 10n,
    cycle: () => {
      const o: Record<string, unknown> = {};
      o.self = o;
      return o;
    },
  };
  for (const [kind, result] of Object.entries(results)) {
    it(`a read returning a ${kind} is one tool_result_invalid observation, run once`, async () => {
      let ran = 0;
      const odd = defineTool({
        name: 'odd',
        description: 'Returns something odd.',
        kind: 'read',
        parameters: z.object({}),
        execute: () => {
          ran++;
          return result();
        },
      });
      const t = use(createFakeModel([{ toolCalls: [toolCall('o', 'odd', {})] }, { content: 'done' }]), { extraTools: [odd] });
      const id = await t.submit('hello');
      await t.drain();
      expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'done' });
      const [call] = (await t.store.steps(id))[0]?.toolCalls ?? [];
      expect(call?.outcome).toBe('error');
      expect(JSON.parse(call?.observation ?? '{}')).toMatchObject({ error: 'tool_result_invalid', retryable: false });
      expect(ran).toBe(1);
    });
  }

  it('a write returning a function ran once: its effect is recorded once, and a retry of the step replays it', async () => {
    let ran = 0;
    const write = defineTool({
      name: 'odd_write',
      description: 'Writes, then returns a function.',
      kind: 'write',
      parameters: z.object({}),
      execute: () => {
        ran++;
        return () => 'not data';
      },
    });
    const t = use(createFakeModel([{ toolCalls: [toolCall('w', 'odd_write', {})] }, { content: 'done' }]), { extraTools: [write] });
    const id = await t.submit('hello');
    await t.drain(1);
    expect(await t.ledger.get(id, `${id}:0:w`)).toMatchObject({ state: 'done', ok: false });
    await t.drain();
    expect((await t.store.require(id)).status).toBe('succeeded');
    const [call] = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(JSON.parse(call?.observation ?? '{}')).toMatchObject({ error: 'tool_result_invalid' });
    expect(ran).toBe(1);
  });

  it('a policy that throws answers the call with approval_policy_failed at once; the tool does not run', async () => {
    let ran = 0;
    const gated = defineTool({
      name: 'gated',
      description: 'Has a broken policy.',
      kind: 'write',
      parameters: z.object({}),
      approval: () => {
        throw new TypeError('policy bug');
      },
      execute: () => {
        ran++;
        return 'ran';
      },
    });
    const t = use(createFakeModel([{ toolCalls: [toolCall('g', 'gated', {})] }, { content: 'done' }]), { extraTools: [gated] });
    const id = await t.submit('hello');
    await t.drain();
    expect((await t.store.require(id)).status).toBe('succeeded');
    const [call] = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(call?.outcome).toBe('error');
    expect(JSON.parse(call?.observation ?? '{}')).toEqual({
      error: 'approval_policy_failed',
      message: 'the approval policy of gated failed: policy bug',
      retryable: false,
    });
    expect(ran).toBe(0);
  });
});
