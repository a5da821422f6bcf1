import type { RunRecord } from '@rein/contract';
import { defineAgent } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import type { ModelRequest } from '../src/adapters/model/model-gateway.js';
import { compensateJobSchema, stepJobSchema } from '../src/adapters/queue/job-catalog.js';
import { type Compensator, createCompensator } from '../src/features/compensation/compensation.js';
import { estimatePromptTokens } from '../src/policy/budget/token-estimator.js';
import type { Commit } from '../src/policy/run/run-transitions.js';
import { childRunId } from '../src/policy/step/sub-agents.js';
import type { Quota, Quotas } from '../src/shared/config.js';
import { tenantKeys } from '../src/shared/keys.js';
import { createFakeModel, type FakeTurn, toolCall } from '../src/testing/index.js';
import { APPROVER, type HarnessOptions, harnessPerTest } from './harness.js';

const use = harnessPerTest();

const refunds = defineAgent({
  name: 'refunds',
  description: 'Issues refunds for orders.',
  instructions: 'You are the refunds agent.',
  tools: ['query_order', 'submit_refund'],
});
const researcher = defineAgent({
  name: 'researcher',
  description: 'Looks up policies.',
  instructions: 'You are the researcher.',
  tools: ['search_policy'],
});

/** A model that plays each agent's turns in order, told apart by the system prompt. */
function byAgent(turns: Record<string, FakeTurn[]>) {
  const seen = new Map<string, number>();
  const agentOf = (r: ModelRequest) => {
    const system = String(r.messages[0]?.content ?? '');
    if (system.startsWith('You are the refunds agent')) return 'refunds';
    if (system.startsWith('You are the researcher')) return 'researcher';
    return 'parent';
  };
  return createFakeModel([
    (request, call) => {
      const agent = agentOf(request);
      const n = seen.get(agent) ?? 0;
      seen.set(agent, n + 1);
      const list = turns[agent] ?? [];
      const turn = list[Math.min(n, list.length - 1)];
      if (!turn) throw new Error(`no turn for ${agent}`);
      return typeof turn === 'function' ? turn(request, call) : turn;
    },
  ]);
}

const tree = (model: ReturnType<typeof byAgent>, opts: HarnessOptions = {}) =>
  use(model, { agents: [refunds, researcher], profile: { agents: ['refunds', 'researcher'], handoffs: ['refunds'] }, ...opts });

const children = async (t: ReturnType<typeof tree>, id: string) => (await t.store.children(id)).map((c) => c.id);

describe('sub-agents as child runs', () => {
  it('parks the parent `waiting` while its child waits for an approval, and resumes it with the answer', async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('c1', 'call_refunds', { input: 'refund 100 on 2024001' })] }, { content: 'Refund done: R-1' }],
      refunds: [
        { toolCalls: [toolCall('r1', 'submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' })] },
        { content: 'Refunded 100.' },
      ],
    });
    const t = tree(model);
    const id = await t.submit('please refund order 2024001');
    await t.drain();
    const parent = await t.store.require(id);
    expect(parent.status).toBe('waiting');
    const childId = childRunId(id, 0, 'c1');
    expect(parent.pendingChildren).toEqual([childId]);
    const child = await t.store.require(childId);
    expect(child).toMatchObject({
      status: 'pending_approval',
      parentRunId: id,
      rootRunId: id,
      agent: 'refunds',
      tenantId: 'acme',
      userId: 'alice',
    });
    expect(child.traceId).toBe(parent.traceId);
    // The child's approval names the tree, in the approver's list.
    const { approvals } = await t.approvals.list(APPROVER, { limit: 50 });
    expect(approvals).toHaveLength(1);
    expect(approvals[0]).toMatchObject({ runId: childId, parentRunId: id, rootRunId: id, toolName: 'submit_refund' });
    // The view shows the tree.
    const view = await t.runs.get(USER_ALICE, id);
    expect(view).toMatchObject({ status: 'waiting', children: [{ id: childId, agent: 'refunds', status: 'pending_approval' }] });
    expect((await t.runs.get(USER_ALICE, childId)).parentRunId).toBe(id);

    await t.approvals.decide(APPROVER, approvals[0]!.id, { kind: 'approve' });
    await t.drain();
    expect(await t.store.require(childId)).toMatchObject({ status: 'succeeded', finalAnswer: 'Refunded 100.' });
    const done = await t.store.require(id);
    expect(done).toMatchObject({ status: 'succeeded', finalAnswer: 'Refund done: R-1' });
    // The parent's model saw the child's answer as the call's observation.
    const seen = model.requests.at(-1)?.messages.find((m) => m.role === 'tool');
    expect(seen?.content).toContain('Refunded 100.');
    const [step] = await t.store.steps(id);
    expect(step?.toolCalls[0]).toMatchObject({ name: 'call_refunds', outcome: 'ok', childRunId: childId, observation: 'Refunded 100.' });
    // Usage: the parent's own, and the tree's (its own plus the child's two steps).
    const final = await t.runs.get(USER_ALICE, id);
    expect(final.usage.totalTokens).toBe(220);
    expect(final.treeUsage?.totalTokens).toBe(440);
    expect(final.children).toEqual([{ id: childId, agent: 'refunds', status: 'succeeded' }]);
    // The parent's stream carries the child's events (with the child's run id), and ends with its own finish.
    const events = await t.store.readEvents(id, '0');
    expect(events.some((e) => e.event.runId === childId && e.event.type === 'run.finished')).toBe(true);
    expect(events.at(-1)?.event).toMatchObject({ runId: id, type: 'run.finished' });
  });

  it('runs two sub-agent calls of one reply as parallel children, resuming once both ended', async () => {
    const model = byAgent({
      parent: [
        {
          toolCalls: [
            toolCall('a', 'call_researcher', { input: 'returns policy' }),
            toolCall('b', 'call_researcher', { input: 'shipping policy' }),
          ],
        },
        { content: 'both known' },
      ],
      researcher: [(r) => ({ content: `about ${String(r.messages.at(-1)?.content)}` })],
    });
    const t = tree(model);
    const id = await t.submit('tell me the policies');
    await t.drain(1);
    const parent = await t.store.require(id);
    expect(parent.status).toBe('waiting');
    expect(parent.pendingChildren).toHaveLength(2);
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'both known' });
    const calls = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(calls.map((c) => c.observation).sort()).toEqual(['about returns policy', 'about shipping policy']);
    // The sub-agent tool is counted by its name, not as an unknown tool.
    const counted = (await t.metrics.toolCalls.get()).values.map((v) => v.labels.tool);
    expect(counted).toContain('call_researcher');
    expect(counted).not.toContain('unknown');
  });

  it("gives the parent a child's failure as an observation, never a stuck parent", async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('c', 'call_researcher', { input: 'loop' })] }, { content: 'the researcher failed' }],
      // Every reply calls the same tool again: the loop guard ends the child `repeated_call`.
      researcher: [{ toolCalls: [toolCall('s', 'search_policy', { query: 'x' })] }],
    });
    const t = tree(model);
    const id = await t.submit('research');
    await t.drain();
    const child = await t.store.require(childRunId(id, 0, 'c'));
    expect(child).toMatchObject({ status: 'failed', reason: 'repeated_call' });
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'the researcher failed' });
    const call = (await t.store.steps(id))[0]?.toolCalls[0];
    expect(call?.outcome).toBe('error');
    expect(JSON.parse(call?.observation ?? '{}')).toEqual({ error: 'subagent_failed', reason: 'repeated_call' });
  });

  it('cancels the descendants of a cancelled run, its parked child and that child’s approval included', async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('c1', 'call_refunds', { input: 'refund' })] }],
      refunds: [{ toolCalls: [toolCall('r1', 'submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' })] }],
    });
    const t = tree(model);
    const id = await t.submit('refund');
    await t.drain();
    const childId = childRunId(id, 0, 'c1');
    expect((await t.store.require(childId)).status).toBe('pending_approval');
    await t.runs.cancel(USER_ALICE, id);
    await t.drain();
    expect(await t.store.require(childId)).toMatchObject({ status: 'cancelled', reason: 'cancelled' });
    expect((await t.store.approvals(childId))[0]).toMatchObject({ status: 'withdrawn', decidedBy: `run:${id}` });
    expect(await t.demo.refunds('acme')).toEqual([]);
  });

  it('creates exactly one child when the worker dies between creating it and parking the parent', async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('c1', 'call_researcher', { input: 'q' })] }, { content: 'ok' }],
      researcher: [{ content: 'answer' }],
    });
    const t = tree(model);
    const id = await t.submit('ask');
    const commit = t.store.compareAndSet.bind(t.store);
    let killed = false;
    t.store.compareAndSet = async (c: Commit): Promise<RunRecord> => {
      if (!killed && c.to.status === 'waiting') {
        killed = true;
        throw new Error('worker killed');
      }
      return commit(c);
    };
    const step0 = t.queue.splice(0, 1)[0]!;
    await expect(t.steps.process({ runId: id, step: 0, ...(step0.job as object) })).rejects.toThrow('worker killed');
    // The child exists; BullMQ takes the step up again, on another worker.
    await t.steps.process({ runId: id, step: 0 });
    await t.drain();
    expect(await children(t, id)).toEqual([childRunId(id, 0, 'c1')]);
    const listed = await t.store.list('acme', {}, { limit: 50 });
    expect(listed.runs).toHaveLength(2);
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'ok' });
    expect(model.requests.filter((r) => String(r.messages[0]?.content).startsWith('You are the researcher'))).toHaveLength(1);
  });

  it("never reads or waits for another tenant's run that happens to have the child's id", async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('c1', 'call_researcher', { input: 'q' })] }, { content: 'done' }],
      researcher: [{ content: 'secret of the parent' }],
    });
    const t = tree(model);
    const id = await t.submit('ask');
    const squatter = {
      ...(await t.store.require(id)),
      id: childRunId(id, 0, 'c1'),
      tenantId: 'evil',
      finalAnswer: 'evil secret',
      status: 'succeeded' as const,
    };
    const { parentRunId: _p, ...foreign } = squatter;
    await t.store.create(
      foreign,
      { role: 'user', content: 'x' },
      { type: 'run.queued', runId: foreign.id, at: foreign.createdAt, data: {} },
    );
    await t.drain();
    const call = (await t.store.steps(id))[0]?.toolCalls[0];
    expect(JSON.parse(call?.observation ?? '{}')).toEqual({ error: 'subagent_failed', reason: 'id_collision' });
    expect(await t.store.require(foreign.id)).toMatchObject({ tenantId: 'evil', finalAnswer: 'evil secret', version: 0 });
  });

  it('refuses sub-agent calls beyond the per-step limit and the depth limit, as observations', async () => {
    const many = Array.from({ length: 1000 }, (_, i) => toolCall(`c${i}`, 'call_researcher', { input: `q${i}` }));
    const model = byAgent({ parent: [{ toolCalls: many }, { content: 'enough' }], researcher: [{ content: 'a' }] });
    const t = tree(model, { delegation: { maxDepth: 3, maxChildrenPerStep: 2 } });
    const id = await t.submit('flood');
    await t.drain(200);
    expect(await children(t, id)).toHaveLength(2);
    const calls = (await t.store.steps(id))[0]?.toolCalls ?? [];
    expect(calls.filter((c) => c.outcome === 'forbidden')).toHaveLength(998);
    // The flood of observations makes the next prompt too big for the budget: the run ends, nothing hangs.
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'token_budget' });

    const deep = tree(byAgent({ parent: [{ toolCalls: [toolCall('c', 'call_researcher', { input: 'q' })] }, { content: 'x' }] }), {
      delegation: { maxDepth: 0, maxChildrenPerStep: 4 },
    });
    const root = await deep.submit('deep');
    await deep.drain();
    expect(await children(deep, root)).toEqual([]);
    expect((await deep.store.steps(root))[0]?.toolCalls[0]).toMatchObject({ outcome: 'forbidden' });
  });
});

describe('one budget for the tree', () => {
  it('stops children whose spending together would exceed what the parent has left, and charges it to the parent', async () => {
    const costly = { promptTokens: 2400, completionTokens: 10 };
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('a', 'call_researcher', { input: 'one' }), toolCall('b', 'call_researcher', { input: 'two' })] }],
      researcher: [{ toolCalls: [toolCall('s', 'search_policy', { query: 'a' })], usage: costly }],
    });
    const t = tree(model);
    const { run } = await t.runs.submit(USER_ALICE, { input: 'dig deep', limits: { maxTokens: 5000 } });
    await t.drain();
    const [a, b] = await Promise.all([t.store.require(childRunId(run.id, 0, 'a')), t.store.require(childRunId(run.id, 0, 'b'))]);
    // Each was capped at creation to its share of what the parent had left ((5000 − 110) / 2)…
    expect(a.limits.maxTokens).toBe(2445);
    // …and both stopped when the tree had no room left, well below their own caps.
    for (const child of [a, b]) {
      expect(child).toMatchObject({ status: 'failed', reason: 'token_budget' });
      expect(child.usage.totalTokens).toBe(2410);
    }
    const parent = await t.store.require(run.id);
    expect(parent).toMatchObject({ status: 'failed', reason: 'token_budget' });
    const view = await t.runs.get(USER_ALICE, run.id);
    expect(view.usage.totalTokens).toBe(110);
    expect(view.treeUsage?.totalTokens).toBe(110 + 2410 + 2410);
    expect(view.treeUsage?.totalTokens).toBeLessThanOrEqual(5000);
  });
  it('never lets children racing in parallel together ask for more than the tree has left', async () => {
    const model = byAgent({
      parent: [
        {
          toolCalls: [toolCall('a', 'call_researcher', { input: 'one' }), toolCall('b', 'call_researcher', { input: 'two' })],
          usage: { promptTokens: 1000, completionTokens: 10 },
        },
      ],
      researcher: [{ content: 'found it', usage: { promptTokens: 100, completionTokens: 10 } }],
    });
    const t = tree(model);
    const { run } = await t.runs.submit(USER_ALICE, { input: 'dig deep', limits: { maxTokens: 3000 } });
    // The parent's step starts both children; then both children's first steps run at once.
    const first = t.queue.splice(0, t.queue.length);
    for (const job of first) await t.steps.process(stepJobSchema.parse(job.job));
    const racing = t.queue.splice(0, t.queue.length);
    expect(racing).toHaveLength(2);
    await Promise.all(racing.map((job) => t.steps.process(stepJobSchema.parse(job.job))));
    const asked = model.requests.filter((r) => String(r.messages[0]?.content).startsWith('You are the researcher'));
    expect(asked).toHaveLength(2);
    // Whatever order their budget checks ran in, what both may spend together fits in the tree's room.
    const parent = await t.store.require(run.id);
    const room = 3000 - parent.usage.totalTokens;
    const prompts = asked.map((r) => estimatePromptTokens('fake-model', r.messages, r.tools ?? []));
    expect(asked.reduce((sum, r, i) => sum + r.maxTokens + (prompts[i] ?? 0), 0)).toBeLessThanOrEqual(room);
  });
});

describe('a tree and a model that ignores max_tokens', () => {
  it('charges what the reply reported, and stops every run of the tree at the first reply past its cap', async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('a', 'call_researcher', { input: 'one' }), toolCall('b', 'call_researcher', { input: 'two' })] }],
      // Each reply runs 1500 tokens past the cap it was sent, and asks for more work.
      researcher: [
        (request) => ({
          toolCalls: [toolCall('s', 'search_policy', { query: 'a' })],
          usage: { promptTokens: 100, completionTokens: request.maxTokens + 1500 },
        }),
      ],
    });
    const t = tree(model);
    const { run } = await t.runs.submit(USER_ALICE, { input: 'dig deep', limits: { maxTokens: 20_000 } });
    await t.drain();
    const asked = (agent: string) => model.requests.filter((r) => String(r.messages[0]?.content).startsWith(agent)).length;
    // One reply past its cap, then no model call anywhere in the tree: not the other child's, not a second of its own, not the parent's.
    expect(asked('You are the researcher')).toBe(1);
    expect(model.requests).toHaveLength(2);
    for (const id of [childRunId(run.id, 0, 'a'), childRunId(run.id, 0, 'b')]) {
      expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'token_budget' });
    }
    expect(await t.store.require(run.id)).toMatchObject({ status: 'failed', reason: 'token_budget' });
    // The overshoot is charged in full, never the cap.
    const view = await t.runs.get(USER_ALICE, run.id);
    expect(view.treeUsage).toMatchObject({ totalTokens: 110 + 100 + 1024 + 1500, overshot: true });
  });
});

describe("children and their tenant's quotas", () => {
  const quota = (over: Partial<Quota> = {}): Quotas => ({
    default: { maxConcurrentRuns: 1, tokensPerDay: 1_000_000, costPerDayUsd: 100, ...over },
    tenants: {},
  });
  const refundTree = {
    parent: [{ toolCalls: [toolCall('c1', 'call_refunds', { input: 'refund 100 on 2024001' })] }, { content: 'Refund done' }],
    refunds: [
      { toolCalls: [toolCall('r1', 'submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' })] },
      { content: 'Refunded 100.' },
    ],
  };

  it('admits a tree once, at its root: a child takes no slot, so a waiting parent never blocks its tenant or its tree', async () => {
    const t = tree(byAgent(refundTree), { quotas: quota() });
    const id = await t.submit('please refund order 2024001');
    await t.drain();
    const childId = childRunId(id, 0, 'c1');
    const [approval] = await t.store.approvals(childId);
    // The child resumes after its approval: it runs without a concurrency slot of its own…
    await t.approvals.decide(APPROVER, approval!.id, { kind: 'approve' });
    const sets = tenantKeys('acme');
    expect(await t.redis.smembers(sets.active)).not.toContain(childId);
    expect(await t.redis.smembers(sets.parked)).not.toContain(childId);
    // …so the tenant's one slot is not taken by it: a new run of the tenant is admitted meanwhile.
    await expect(t.submit('another question')).resolves.toEqual(expect.any(String));
    await t.drain();
    expect(await t.store.require(childId)).toMatchObject({ status: 'succeeded' });
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', finalAnswer: 'Refund done' });
  });

  it("counts a child's spending toward its tenant's daily tokens; a child over the quota fails, and its parent is told", async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('c1', 'call_researcher', { input: 'dig' })], usage: { promptTokens: 100, completionTokens: 10 } }],
      researcher: [{ toolCalls: [toolCall('s', 'search_policy', { query: 'a' })], usage: { promptTokens: 900, completionTokens: 10 } }],
    });
    const t = tree(model, { quotas: quota({ maxConcurrentRuns: 5, tokensPerDay: 1000 }) });
    const id = await t.submit('research');
    await t.drain();
    const child = await t.store.require(childRunId(id, 0, 'c1'));
    expect(child).toMatchObject({ status: 'failed', reason: 'tenant_quota' });
    const day = new Date().toISOString().slice(0, 10);
    expect(Number(await t.redis.hget(tenantKeys('acme').usage(day), 'tokens'))).toBe(110 + 910);
    const [step] = await t.store.steps(id);
    expect(JSON.parse(step?.toolCalls[0]?.observation ?? '{}')).toEqual({ error: 'subagent_failed', reason: 'tenant_quota' });
    expect(await t.store.require(id)).toMatchObject({ status: 'failed', reason: 'tenant_quota' });
  });
});

describe('compensation of the tree', () => {
  it("undoes a child's refund with its parent's saga (the child's writes are the tree's)", async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('c1', 'call_refunds', { input: 'refund 100 on 2024001' })] }],
      refunds: [
        { toolCalls: [toolCall('r1', 'submit_refund', { orderNo: '2024001', amount: 100, reason: 'late' })] },
        { content: 'Refunded 100.' },
      ],
    });
    let compensator: Compensator | undefined;
    const t = tree(model, {
      profile: { agents: ['refunds'], compensation: 'auto' },
      onFinished: (run) => compensator?.onRunFinished(run) ?? Promise.resolve(),
    });
    compensator = createCompensator({
      store: t.store,
      applier: t.applier,
      ledger: t.ledger,
      tools: t.tools,
      agents: t.agents,
      enqueue: t.enqueue,
      metrics: t.metrics,
      logger: t.logger,
      emit: async () => undefined,
      toolTimeoutMs: 2000,
      approvalTtlMs: 60_000,
    });
    // One step: the parent fails max_steps once its child answered.
    const { run } = await t.runs.submit(USER_ALICE, { input: 'refund it', limits: { maxSteps: 1 } });
    await t.drain();
    const childId = childRunId(run.id, 0, 'c1');
    const [approval] = await t.store.approvals(childId);
    await t.approvals.decide(APPROVER, approval!.id, { kind: 'approve' });
    await t.drain();
    expect(await t.store.require(childId)).toMatchObject({ status: 'succeeded' });
    expect(await t.store.require(run.id)).toMatchObject({ status: 'failed', reason: 'max_steps' });
    expect((await t.demo.refunds('acme')).map((r) => r.status)).toEqual(['submitted']);
    // The child's success started no saga of its own; the parent's holds the child's refund.
    expect(await t.store.compensation(childId)).toBeNull();
    expect(await t.store.compensation(run.id)).toMatchObject({
      status: 'running',
      steps: [{ runId: childId, step: 0, toolCallId: 'r1', tool: 'submit_refund', status: 'pending' }],
    });
    const job = t.queue.find((q) => q.name === 'compensate');
    expect(await compensator.process(compensateJobSchema.parse(job?.job), false)).toBeTruthy();
    expect((await t.demo.refunds('acme')).map((r) => r.status)).toEqual(['reversed']);
    expect(await t.store.compensation(run.id)).toMatchObject({ status: 'done' });
  });
});

describe('hand-offs', () => {
  it('continues the same run with the target agent, its instructions and tools, and says which agent took each step', async () => {
    const model = byAgent({
      parent: [{ toolCalls: [toolCall('h', 'transfer_to_refunds', { reason: 'a refund' })] }],
      refunds: [{ content: 'I am the refunds agent; how much?' }],
    });
    const t = tree(model);
    const id = await t.submit('I want my money back');
    await t.drain();
    const run = await t.store.require(id);
    expect(run).toMatchObject({ status: 'succeeded', agent: 'refunds', finalAnswer: 'I am the refunds agent; how much?' });
    expect((await t.store.steps(id)).map((s) => s.agent)).toEqual(['order-assistant', 'refunds']);
    const [first, second] = model.requests;
    expect(first?.tools.map((x) => x.function.name)).toContain('transfer_to_refunds');
    expect(second?.tools.map((x) => x.function.name).sort()).toEqual(['query_order', 'submit_refund']);
    // The conversation so far goes along.
    expect(second?.messages.some((m) => m.role === 'user' && m.content === 'I want my money back')).toBe(true);
    const trace = await t.runs.trace(USER_ALICE, id);
    expect(trace.steps.map((s) => s.agent)).toEqual(['order-assistant', 'refunds']);
    expect((await t.metrics.toolCalls.get()).values.map((v) => v.labels)).toEqual([{ tool: 'transfer_to_refunds', outcome: 'ok' }]);
  });
});

const USER_ALICE = { tenantId: 'acme', userId: 'alice', roles: ['user' as const] };
