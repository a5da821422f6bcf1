import { defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelRequest } from '../src/adapters/model/model-gateway.js';
import { toolDigest } from '../src/policy/app/tool-digest.js';
import { estimatePromptTokens } from '../src/policy/budget/token-estimator.js';
import { contextPolicySchema } from '../src/policy/step/context-policy.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { harnessPerTest, USER } from './harness.js';

/** Plan mode and the context policy on the step engine (real Redis, fake model). */

const use = harnessPerTest();

describe('plan mode on the step engine', () => {
  const planning = { plan: { minSteps: 2, maxSteps: 6 } };

  it('asks for the plan as structured output, gives an invalid plan one repair turn, then fails plan_invalid', async () => {
    const model = createFakeModel([
      { content: 'I will look it up' },
      { content: '{"steps":[{"step":1,"action":"drop_tables","args":{},"desc":"x","risk":"low"}]}' },
    ]);
    const t = use(model, { profile: planning });
    const id = await t.submit('order A12345?');
    await t.drain();
    expect(model.requests).toHaveLength(2);
    expect(model.requests[0]?.responseFormat).toMatchObject({ name: 'plan' });
    expect(model.requests[1]?.messages.at(-1)).toMatchObject({
      role: 'system',
      content: expect.stringMatching(/^Your plan is invalid: the reply is not JSON/),
    });
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'failed', reason: 'plan_invalid' });
    expect(run.usage.totalTokens).toBe(220); // both planning calls are charged
  });

  it('accepts a plan of reads without an approval and links each call to its step', async () => {
    const plan = {
      steps: [
        { step: 1, action: 'query_order', args: { orderNo: 'A12345' }, desc: 'look up', risk: 'low' },
        { step: 2, action: 'search_policy', args: { query: 'returns' }, desc: 'policy', risk: 'low' },
      ],
    };
    const model = createFakeModel([
      { content: JSON.stringify(plan) },
      { toolCalls: [toolCall('a', 'query_order', { orderNo: 'A12345' }), toolCall('b', 'search_policy', { query: 'refunds' })] },
      { content: 'done' },
    ]);
    const t = use(model, { profile: planning });
    const id = await t.submit('order A12345?');
    await t.drain();
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'succeeded', plan: { status: 'accepted', done: [1] } });
    expect(model.requests[1]?.responseFormat).toBeUndefined();
    const calls = (await t.store.steps(id)).flatMap((s) => s.toolCalls);
    expect(calls.map((c) => [c.name, c.planStep])).toEqual([
      ['query_order', 1],
      ['search_policy', undefined], // other arguments: off the plan
    ]);
  });
});

/** A read tool whose results are far past any context policy's limit. */
const big = defineTool({
  name: 'big_report',
  description: 'A long report.',
  kind: 'read',
  parameters: z.object({ part: z.number() }),
  execute: ({ part }) => ({ part, rows: Array.from({ length: 200 }, (_, i) => `row ${i} of part ${part}`) }),
});

describe('context policy on the step engine', () => {
  it('sends what the policy keeps, and budgets the prompt on what is sent', async () => {
    const context = contextPolicySchema.parse({ toolResultMaxChars: 300, historyTokens: 600 });
    const model = createFakeModel([
      ...[1, 2, 3, 4, 5, 6].map((part) => ({ toolCalls: [toolCall(`c${part}`, 'big_report', { part })] })),
      { content: 'done' },
    ]);
    const t = use(model, { extraTools: [big], profile: { context, limits: { maxSteps: 10, maxTokens: 3_200, timeoutMs: 60_000 } } });
    const id = await t.submit('reports please', undefined, { maxTokens: 3_200 });
    await t.drain();
    expect((await t.store.require(id)).status).toBe('succeeded');
    const last = model.requests.at(-1);
    // Summaries with handles, never a whole report; the oldest turns as one summary message.
    expect(JSON.stringify(last?.messages)).not.toContain('row 150 of part');
    expect(last?.messages.some((m) => m.role === 'system' && m.content.startsWith('Summary of'))).toBe(true);
    const toolMessages = (messages: Array<{ role: string }> | undefined) => messages?.filter((m) => m.role === 'tool').length;
    expect(toolMessages(await t.store.messages(id))).toBe(6); // the log keeps every turn
    expect(toolMessages(last?.messages)).toBeLessThan(6);
    model.requests.forEach((req, n) => {
      const left = 3_200 - 110 * n - estimatePromptTokens('fake-model', req.messages, req.tools);
      expect(req.maxTokens).toBe(Math.min(1024, left));
    });
  });
});

describe("context policy: summarize 'model'", () => {
  it('has the model write the summary of the oldest turns: once per step (a retry reuses it), sent, and charged', async () => {
    const context = contextPolicySchema.parse({ toolResultMaxChars: 300, historyTokens: 600, summarize: 'model' });
    const replies = [
      ...[1, 2, 3, 4, 5, 6].map((part) => ({ toolCalls: [toolCall(`c${part}`, 'big_report', { part })] })),
      { content: 'done' },
    ];
    let answered = 0;
    let summaries = 0;
    let failedOnce = false;
    const isSummaryCall = (req: ModelRequest) => (req.messages[0]?.content ?? '').startsWith('You summarise');
    const model = createFakeModel([
      (req) => {
        if (isSummaryCall(req)) {
          summaries++;
          return { content: `SUMMARY-${summaries}`, usage: { promptTokens: 50, completionTokens: 7 } };
        }
        // The first step sent with a model-written summary fails once, after its summary was journaled.
        if (!failedOnce && req.messages.some((m) => (m.content ?? '').startsWith('Summary of the earlier turns'))) {
          failedOnce = true;
          throw new Error('flaky endpoint');
        }
        return replies[answered++] ?? { content: 'done' };
      },
    ]);
    const t = use(model, { extraTools: [big], profile: { context, limits: { maxSteps: 10, maxTokens: 10_000, timeoutMs: 60_000 } } });
    const id = await t.submit('reports please', undefined, { maxTokens: 10_000 });
    await expect(t.drain()).rejects.toThrow('flaky endpoint');
    const parked = await t.store.require(id);
    await t.steps.process({ runId: id, step: parked.step, tenantId: parked.tenantId }); // BullMQ's retry of the step
    await t.drain();
    const run = await t.store.require(id);
    expect(run.status).toBe('succeeded');
    expect(failedOnce).toBe(true);
    // One summary call per step that compacted, the failed attempt's reused by its retry.
    const journaled = (await Promise.all(Array.from({ length: run.step + 1 }, (_, s) => t.journal.summary(id, s)))).filter(Boolean);
    expect(summaries).toBeGreaterThan(0);
    expect(journaled).toHaveLength(summaries);
    const retried = model.requests.filter((r) => !isSummaryCall(r) && r.messages.some((m) => (m.content ?? '').includes('SUMMARY-1')));
    expect(retried.length).toBeGreaterThan(0);
    // The structured summary is not what was sent once the model wrote one.
    expect(model.requests.some((r) => r.messages.some((m) => (m.content ?? '').startsWith('Summary of 1 earlier')))).toBe(false);
    // Charged once: every answered call (110 tokens each) and every summary (57 each).
    expect(run.usage.totalTokens).toBe(replies.length * 110 + summaries * 57);
  });
});

describe("a plan's approval is bound to its tools' policies", () => {
  const planning = { plan: { minSteps: 1, maxSteps: 6 } };
  /** A write whose policy the test makes stricter (or re-versions) while the plan waits for its approval. */
  const setup = () => {
    let ran = 0;
    const policy = { risk: 'high' as 'high' | 'critical', requiredRole: 'user' as 'user' | 'supervisor' };
    const tool = defineTool({
      name: 'wire_money',
      description: 'Wires money.',
      kind: 'write',
      parameters: z.object({ amount: z.number() }),
      approval: ({ amount }) => ({ ...policy, summary: `wire ${amount}` }),
      execute: () => {
        ran++;
        return { wired: true };
      },
    });
    const plan = { steps: [{ step: 1, action: 'wire_money', args: { amount: 900 }, desc: 'wire it', risk: 'high' }] };
    const model = createFakeModel([
      { content: JSON.stringify(plan) },
      { toolCalls: [toolCall('w', 'wire_money', { amount: 900 })] },
      { content: 'done' },
    ]);
    const t = use(model, { extraTools: [tool], profile: planning });
    return { t, tool, policy, ran: () => ran };
  };
  const approvePlan = async (t: ReturnType<typeof use>, id: string) => {
    const [approval] = await t.store.approvals(id);
    expect(approval).toMatchObject({ kind: 'plan', risk: 'high', requiredRole: 'user', status: 'pending' });
    // The requester may approve her own plan: it needed only the user role when it was asked for.
    await t.approvals.decide(USER, approval?.id ?? '', { kind: 'approve' });
    await t.drain();
  };

  it('runs a call of the plan on its approval while the policy is unchanged', async () => {
    const { t, ran } = setup();
    const id = await t.submit('wire 900');
    await t.drain();
    await approvePlan(t, id);
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', plan: { status: 'approved', done: [1] } });
    expect(ran()).toBe(1);
  });

  it('does not run a call on a plan approval whose tool became stricter before it was approved: it asks again', async () => {
    const { t, policy, ran } = setup();
    const id = await t.submit('wire 900');
    await t.drain();
    Object.assign(policy, { risk: 'critical', requiredRole: 'supervisor' });
    await approvePlan(t, id);
    expect(ran()).toBe(0);
    const run = await t.store.require(id);
    expect(run.status).toBe('pending_approval');
    const own = (await t.store.approvals(id)).find((a) => a.kind !== 'plan');
    expect(own).toMatchObject({ toolName: 'wire_money', risk: 'critical', requiredRole: 'supervisor', status: 'pending' });
    // The requester can no longer wave it through.
    await expect(t.approvals.decide(USER, own?.id ?? '', { kind: 'approve' })).rejects.toMatchObject({ status: 403 });
    expect(ran()).toBe(0);
  });

  it("does not run a call on a plan approval judged by an older version of the tool's policy", async () => {
    const { t, tool, ran } = setup();
    const id = await t.submit('wire 900');
    await t.drain();
    tool.policyVersion = 2;
    await approvePlan(t, id);
    expect(ran()).toBe(0);
    expect((await t.store.approvals(id)).find((a) => a.kind !== 'plan')).toMatchObject({ toolName: 'wire_money', status: 'pending' });
  });
});

describe('an upgrade re-checks an approved plan against the new version’s tools', () => {
  const wire = (parameters: z.ZodObject, ran: string[], version: string) =>
    defineTool({
      name: 'wire_money',
      description: 'Wires money.',
      kind: 'write',
      parameters,
      approval: ({ amount }) => ({ risk: 'high', requiredRole: 'user', summary: `wire ${amount}` }),
      execute: () => {
        ran.push(version);
        return { wired: true };
      },
    });
  const plan = {
    steps: [
      { step: 1, action: 'search_policy', args: { query: 'wire' }, desc: 'check the policy', risk: 'low' },
      { step: 2, action: 'wire_money', args: { amount: 900 }, desc: 'wire it', risk: 'high' },
    ],
  };

  for (const [what, v2Params, kept] of [
    ['keeps the plan when the tools are unchanged: v2 carries out the approved step', z.object({ amount: z.number() }), true],
    [
      'withdraws the plan when a step’s tool changed: its approved step is asked again under v2’s definition',
      z.object({ amount: z.number(), memo: z.string().optional() }),
      false,
    ],
  ] as const) {
    it(what, async () => {
      const ran: string[] = [];
      const model = createFakeModel([
        { content: JSON.stringify(plan) },
        { toolCalls: [toolCall('s', 'search_policy', { query: 'wire' })] },
        { toolCalls: [toolCall('w', 'wire_money', { amount: 900 })] },
        { content: 'done' },
      ]);
      const fleet = { upgrades: {} as Record<string, string> };
      const versions = {
        own: 'v1',
        known: () => fleet,
        fresh: async () => fleet,
        enqueue: async () => undefined,
      };
      const t = use(model, {
        extraTools: [wire(z.object({ amount: z.number() }), ran, 'v1')],
        profile: { plan: { minSteps: 1, maxSteps: 6 } },
        versions,
      });
      const id = await t.submit('wire 900');
      await t.drain();
      const [approval] = await t.store.approvals(id);
      await t.approvals.decide(USER, approval?.id ?? '', { kind: 'approve' });
      // v1 carries out the plan's first step (a read), then the fleet moves to v2: its write's tool as v2 defines it.
      await t.drain(2);
      expect(await t.store.require(id)).toMatchObject({ appVersion: 'v1', plan: { status: 'approved', done: [1] } });
      (t.tools as Map<string, Tool>).set('wire_money', wire(v2Params, ran, 'v2'));
      versions.own = 'v2';
      fleet.upgrades = { v1: 'v2' };
      await t.drain();
      const run = await t.store.require(id);
      expect(run.appVersion).toBe('v2');
      const planApproval = (await t.store.approvals(id)).find((a) => a.kind === 'plan');
      if (kept) {
        expect(planApproval?.status).toBe('approved');
        expect(run).toMatchObject({ status: 'succeeded', plan: { status: 'approved', done: [1, 2] } });
        expect(ran).toEqual(['v2']);
        return;
      }
      // Not executed on the approval of a plan whose tool the approver saw otherwise: asked for again, under v2.
      expect(planApproval).toMatchObject({ status: 'withdrawn', reason: 'version_changed' });
      expect(ran).toEqual([]);
      expect(run).toMatchObject({ status: 'pending_approval', plan: { status: 'rejected' } });
      const own = (await t.store.approvals(id)).find((a) => a.kind !== 'plan');
      expect(own).toMatchObject({ toolName: 'wire_money', status: 'pending', toolDigest: toolDigest(t.tools.get('wire_money') as Tool) });
    });
  }
});
