import type { Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();
const OTHER = { ...USER, userId: 'bob' };

/** A model that remembers the customer's language, reads it back, then answers with what it read. */
const rememberThenRead = () =>
  createFakeModel([
    { toolCalls: [toolCall('m1', 'memory_put', { key: 'language', value: { lang: 'zh', note: '喜欢中文回复' } })] },
    { toolCalls: [toolCall('m2', 'memory_get', { key: 'language' }), toolCall('m3', 'memory_search', { query: '中文' })] },
    (req) => ({ content: `read: ${req.messages.at(-2)?.content} | ${req.messages.at(-1)?.content}` }),
  ]);

describe('agents with memory', () => {
  it("remember in the run's user's space under the agent's namespace, read it back, and the write waits for its approval", async () => {
    const t = use(rememberThenRead(), {
      // The harness builds its profile directly; defineAgent adds these tools for an agent with memory.
      profile: {
        tools: ['memory_get', 'memory_search', 'memory_put'],
        memory: { namespace: ['order-desk', 'prefs'], approval: (put) => ({ risk: 'high', summary: `Remember ${put.key}` }) },
      },
    });
    const id = await t.submit('记住：客户喜欢中文回复', USER);
    await t.drain();
    // memory_put is a write: parked on the agent's policy, nothing stored yet.
    const [approval] = (await t.approvals.list(APPROVER, { status: 'pending', limit: 10 })).approvals;
    expect(approval).toMatchObject({ toolName: 'memory_put', summary: 'Remember language', risk: 'high' });
    expect(await t.itemStore.get(USER, ['order-desk', 'prefs'], 'language')).toBeNull();

    await t.approvals.decide(APPROVER, approval?.id ?? '', { kind: 'approve' });
    await t.drain();
    const run = await t.store.require(id);
    expect(run.status).toBe('succeeded');
    expect(run.finalAnswer).toContain('喜欢中文回复'); // memory_get and memory_search found it
    // What client.store shows that user; no one else sees it.
    expect((await t.itemStore.get(USER, ['order-desk', 'prefs'], 'language'))?.value).toEqual({ lang: 'zh', note: '喜欢中文回复' });
    expect(await t.itemStore.get(OTHER, ['order-desk', 'prefs'], 'language')).toBeNull();
  });

  it('refuses memory tools to an agent without memory, and a tool of the app named like one', async () => {
    const { defineAgent, defineApp, defineTool } = await import('@rein/define');
    const { z } = await import('zod');
    expect(() => defineAgent({ name: 'x', instructions: 'x', tools: ['memory_get'] })).toThrow(/built in, and only for agents with memory/);
    const own = defineTool({ name: 'memory_put', description: 'x', kind: 'read', parameters: z.object({}), execute: () => 1 });
    expect(() => defineApp({ agents: [defineAgent({ name: 'x', instructions: 'x', tools: [] })], tools: [own] })).toThrow(/Rein's own/);
    const withMemory = defineAgent({ name: 'y', instructions: 'y', tools: [], memory: { namespace: ['y'] } });
    expect(withMemory.tools).toEqual(['memory_get', 'memory_search', 'memory_put']);
    expect(() => defineAgent({ name: 'z', instructions: 'z', tools: [], memory: { namespace: ['a.b'] } })).toThrow(/no periods/);
  });

  it("changes memory_put's digest (and the agent's) with the agent's memory policy, so an upgrade withdraws an approval asked under the old one", async () => {
    const { AgentCatalog, defineAgent } = await import('@rein/define/internal');
    const { createMemoryTools } = await import('../src/features/store/memory-tools.js');
    const { toolDigest } = await import('../src/policy/app/tool-digest.js');
    const { agentDigest } = await import('../src/policy/app/version-manifest.js');
    const agent = (approval?: () => { risk: 'high' }) =>
      defineAgent({ name: 'desk', instructions: 'x', tools: [], memory: { namespace: ['desk'], ...(approval ? { approval } : {}) } });
    const putOf = (a: ReturnType<typeof agent>) =>
      createMemoryTools({} as never, new AgentCatalog([a], 'desk', 'x')).find((t) => t.name === 'memory_put') as Tool;
    const [open, gated, gatedAgain] = [agent(), agent(() => ({ risk: 'high' })), agent(() => ({ risk: 'high' }))];
    expect(toolDigest(putOf(open))).not.toBe(toolDigest(putOf(gated)));
    expect(toolDigest(putOf(gated))).toBe(toolDigest(putOf(gatedAgain)));
    expect(agentDigest(open)).not.toBe(agentDigest(gated));
  });
});
