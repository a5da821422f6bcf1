import { randomUUID } from 'node:crypto';
import {
  type Assistant,
  type AssistantGraph,
  Client,
  type Cron,
  type GraphSchema,
  type Run,
  type Thread,
  type ThreadState,
} from '@langchain/langgraph-sdk';
import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
const POLICY = 'What is your return policy?';
const AGENT = 'order-assistant';

const fleet = fleetPerFile();

/** The SDK as its users run it: `<api>/lg`, a Rein key in `x-api-key`, no retries hiding a refusal. */
const sdk = (key = KEYS.user.key) => new Client({ apiUrl: `${fleet().api}/lg`, apiKey: key, callerOptions: { maxRetries: 0 } });
const human = (content: string) => ({ messages: [{ role: 'user', content }] });

type Values = {
  messages: Array<{ type: string; name?: string; content: unknown; tool_calls?: Array<{ name: string; args: Record<string, unknown> }> }>;
};
type Interrupt = { id: string; value: { tool: string; arguments: Record<string, unknown>; approval_id: string; risk: string } };

/** A thread whose run parked on create_ticket, through `runs.wait`. */
async function parkedThread(client = sdk()) {
  const thread: Thread = await client.threads.create({ metadata: { case: 'late-order' } });
  const values = (await client.runs.wait(thread.thread_id, AGENT, { input: human(LATE_ORDER) })) as Values & {
    __interrupt__?: Interrupt[];
  };
  const interrupt = values.__interrupt__?.[0];
  if (!interrupt) throw new Error(`no interrupt: ${JSON.stringify(values)}`);
  return { thread, interrupt, client };
}

describe('the LangGraph SDK against Rein (/lg)', () => {
  it('assistants are the app’s agents: search, get, graph and schemas', async () => {
    const client = sdk();
    const found: Assistant[] = await client.assistants.search({ graphId: AGENT });
    expect(found.map((a) => a.assistant_id)).toEqual([AGENT]);
    const one: Assistant = await client.assistants.get(AGENT);
    expect(one).toMatchObject({ graph_id: AGENT, version: 1 });
    const graph: AssistantGraph = await client.assistants.getGraph(AGENT);
    expect(graph.nodes.map((n) => n.id)).toEqual(['__start__', 'agent', 'tools', '__end__']);
    const schemas: GraphSchema = await client.assistants.getSchemas(AGENT);
    expect(JSON.stringify(schemas.config_schema)).toContain('create_ticket');
    await expect(client.assistants.get('nobody')).rejects.toThrow(/404|not_found/);
  });

  it('streams the late-order complaint, parks on create_ticket as an interrupt, and resumes with an approval', async () => {
    const client = sdk();
    const thread = await client.threads.create({ threadId: `lg-${randomUUID()}`, metadata: { channel: 'web' } });
    const events: Array<{ event: string; data: unknown }> = [];
    for await (const part of client.runs.stream(thread.thread_id, AGENT, {
      input: human(LATE_ORDER),
      streamMode: ['values', 'updates', 'messages-tuple', 'events'],
    })) {
      events.push(part);
    }
    expect(events[0]?.event).toBe('metadata');
    const kinds = new Set(events.map((e) => e.event));
    for (const kind of ['values', 'updates', 'messages', 'events']) expect(kinds).toContain(kind);
    const last = events.filter((e) => e.event === 'values').at(-1)?.data as Values & { __interrupt__: Interrupt[] };
    expect(last.__interrupt__).toHaveLength(1);
    expect(last.__interrupt__[0]?.value).toMatchObject({ tool: 'create_ticket', risk: 'high', arguments: { orderNo: '2024001' } });
    // The token-level mode carries the tool results as tool messages.
    const tuples = events.filter((e) => e.event === 'messages').map((e) => (e.data as [{ type: string; name?: string }])[0]);
    expect(tuples.some((m) => m.type === 'tool' && m.name === 'query_order')).toBe(true);

    const parked: Thread = await client.threads.get(thread.thread_id);
    expect(parked.status).toBe('interrupted');
    const state: ThreadState = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual(['tools']);
    const interruptId = last.__interrupt__[0]?.id;
    expect(state.tasks[0]?.interrupts.map((i) => i.id)).toEqual([interruptId]);

    const values = (await client.runs.wait(thread.thread_id, AGENT, { command: { resume: { approved: true } } })) as Values;
    const answer = values.messages.at(-1);
    expect(answer?.type).toBe('ai');
    expect(String(answer?.content)).toContain('已为订单 2024001 创建加急工单');
    expect(values.messages[0]).toMatchObject({ type: 'human', content: LATE_ORDER });
    expect((await client.threads.get(thread.thread_id)).status).toBe('idle');

    // History: one checkpoint per committed step, newest first, each a prefix of the next.
    const history: ThreadState[] = await client.threads.getHistory(thread.thread_id, { limit: 50 });
    expect(history.length).toBeGreaterThanOrEqual(4);
    const sizes = history.map((h) => (h.values as Values).messages.length);
    expect([...sizes].sort((a, b) => b - a)).toEqual(sizes);
    const older: ThreadState[] = await client.threads.getHistory(thread.thread_id, {
      limit: 1,
      before: { configurable: { checkpoint_id: history[0]?.checkpoint.checkpoint_id } },
    });
    expect(older[0]?.checkpoint.checkpoint_id).toBe(history[1]?.checkpoint.checkpoint_id);

    const runs: Run[] = await client.runs.list(thread.thread_id);
    expect(runs.map((r) => r.status)).toEqual(['success']);
  });

  it('an edit keeps four eyes (the requester may not edit); an approver’s edit runs; a rejection reaches the model', async () => {
    const edited = await parkedThread();
    const args = { ...edited.interrupt.value.arguments, priority: 'low' };
    await expect(
      edited.client.runs.wait(edited.thread.thread_id, AGENT, {
        command: { resume: { [edited.interrupt.id]: { approved: true, arguments: args } } },
      }),
    ).rejects.toThrow(/403.*with edits needs an approver/);
    const runId = edited.interrupt.id.split('.')[0] ?? '';
    await fleet().client(KEYS.approver.key).approvals.approve(edited.interrupt.id, { arguments: args });
    const values = (await edited.client.runs.join(edited.thread.thread_id, runId)) as Values;
    expect(values.messages.at(-1)?.type).toBe('ai');
    const ticket = values.messages.find((m) => m.type === 'tool' && m.name === 'create_ticket');
    expect(String(ticket?.content)).toContain('"priority":"low"');
    const trace = await fleet().client().runs.trace(runId);
    const call = trace.steps.flatMap((s) => s.toolCalls).find((c) => c.name === 'create_ticket');
    expect(call?.arguments).toMatchObject({ priority: 'low' });
    expect(call?.approval).toMatchObject({ editedBy: 'lisi', status: 'approved' });

    const rejected = await parkedThread();
    const after = (await rejected.client.runs.wait(rejected.thread.thread_id, AGENT, {
      command: { resume: { approved: false, reason: 'not for this customer' } },
    })) as Values;
    expect(String(after.messages.at(-1)?.content)).toContain('工单未创建');
  });

  it('a resume goes through the approval rules: another tenant sees nothing, goto is refused, nothing to resume is a 409', async () => {
    const { thread } = await parkedThread();
    const other = sdk(KEYS.other.key);
    await expect(other.threads.get(thread.thread_id)).rejects.toThrow(/404/);
    await expect(other.runs.wait(thread.thread_id, AGENT, { command: { resume: { approved: true } } })).rejects.toThrow(/404/);
    // The approver of the same tenant has threads of their own: this one is not theirs.
    await expect(sdk(KEYS.approver.key).threads.getState(thread.thread_id)).rejects.toThrow(/404/);
    const client = sdk();
    await expect(client.runs.wait(thread.thread_id, AGENT, { command: { goto: 'tools' } })).rejects.toThrow(/command_refused/);
    await expect(
      client.runs.wait(thread.thread_id, AGENT, { command: { resume: { 'not-an-approval': { approved: true } } } }),
    ).rejects.toThrow(/invalid_resume/);
    await client.runs.wait(thread.thread_id, AGENT, { command: { resume: { approved: true } } });
    await expect(client.runs.wait(thread.thread_id, AGENT, { command: { resume: { approved: true } } })).rejects.toThrow(
      /nothing_to_resume/,
    );
  });

  it('multitask strategies are ifBusy: reject, enqueue, interrupt and rollback on a busy thread', async () => {
    const { thread, client } = await parkedThread();
    await expect(client.runs.create(thread.thread_id, AGENT, { input: human(POLICY), multitaskStrategy: 'reject' })).rejects.toThrow(
      /session_busy/,
    );
    const queued: Run = await client.runs.create(thread.thread_id, AGENT, { input: human(POLICY), multitaskStrategy: 'enqueue' });
    expect(queued.status).toBe('pending');
    const interrupting: Run = await client.runs.create(thread.thread_id, AGENT, { input: human(POLICY), multitaskStrategy: 'interrupt' });
    const joined = (await client.runs.join(thread.thread_id, interrupting.run_id)) as Values;
    expect(joined.messages.at(-1)?.type).toBe('ai');
    const statuses = (await client.runs.list(thread.thread_id, { limit: 10 })).map((r) => r.status);
    expect(statuses).toContain('interrupted');

    const second = await parkedThread();
    const rolling: Run = await second.client.runs.create(second.thread.thread_id, AGENT, {
      input: human(POLICY),
      multitaskStrategy: 'rollback',
    });
    await second.client.runs.join(second.thread.thread_id, rolling.run_id);
    const first = await second.client.runs.get(second.thread.thread_id, second.interrupt.id.split('.')[0] ?? '');
    expect(first.status).toBe('interrupted');
  });

  it('threads: create with if_exists, search and update metadata, delete; an unknown thread is a 404 unless if_not_exists', async () => {
    const client = sdk();
    const id = `lg-${randomUUID()}`;
    await client.threads.create({ threadId: id, metadata: { team: 'support' } });
    await expect(client.threads.create({ threadId: id })).rejects.toThrow(/thread_exists/);
    const same: Thread = await client.threads.create({ threadId: id, ifExists: 'do_nothing' });
    expect(same.metadata).toMatchObject({ team: 'support' });
    const updated: Thread = await client.threads.update(id, { metadata: { tier: 'gold' } });
    expect(updated.metadata).toMatchObject({ team: 'support', tier: 'gold' });
    const found: Thread[] = await client.threads.search({ metadata: { tier: 'gold' } });
    expect(found.map((t) => t.thread_id)).toContain(id);
    await client.threads.delete(id);
    await expect(client.threads.get(id)).rejects.toThrow(/404/);

    await expect(client.runs.wait(`lg-${randomUUID()}`, AGENT, { input: human(POLICY) })).rejects.toThrow(/404/);
    const fresh = `lg-${randomUUID()}`;
    const values = (await client.runs.wait(fresh, AGENT, { input: human(POLICY), ifNotExists: 'create' })) as Values;
    expect([values.messages[0]?.type, values.messages.at(-1)?.type]).toEqual(['human', 'ai']);
    // A stateless run: no thread, its own values.
    const stateless = (await client.runs.wait(null, AGENT, { input: human(POLICY) })) as Values;
    expect(stateless.messages.at(-1)?.type).toBe('ai');
  });

  it('crons are schedules; what Rein does not serve is a 501 that says so', async () => {
    const client = sdk();
    const cron = await client.crons.create(AGENT, { schedule: '0 9 * * 1', input: human(POLICY) });
    const listed: Cron[] = await client.crons.search({ assistantId: AGENT });
    expect(listed.map((c) => c.cron_id)).toContain(cron.cron_id);
    expect(listed.find((c) => c.cron_id === cron.cron_id)).toMatchObject({ schedule: '0 9 * * 1', enabled: true, thread_id: null });
    await client.crons.delete(cron.cron_id);
    expect((await client.crons.search({ assistantId: AGENT })).map((c) => c.cron_id)).not.toContain(cron.cron_id);

    await expect(client.runs.wait(null, AGENT, { input: human(POLICY), interruptBefore: ['tools'] })).rejects.toThrow(/not_served/);
  });

  it("a thread's cron fires into the thread: each firing is a run of the thread, after what it already said", async () => {
    const client = sdk();
    const thread: Thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, AGENT, { input: human(POLICY) });
    const cron = await client.crons.createForThread(thread.thread_id, AGENT, { schedule: '*/2 * * * * *', input: human(POLICY) });
    expect(cron).toMatchObject({ thread_id: thread.thread_id });
    expect((await client.crons.search({ threadId: thread.thread_id })).map((c) => c.cron_id)).toEqual([cron.cron_id]);
    let runs: Run[] = [];
    for (let i = 0; i < 150 && runs.filter((r) => r.status === 'success').length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      runs = await client.runs.list(thread.thread_id);
    }
    await client.crons.delete(cron.cron_id);
    expect(runs.filter((r) => r.status === 'success').length).toBeGreaterThanOrEqual(2);
    // The thread's history holds both turns: the firing continued the conversation.
    const state: ThreadState = await client.threads.getState(thread.thread_id);
    const humans = (state.values as Values).messages.filter((m) => m.type === 'human');
    expect(humans.length).toBeGreaterThanOrEqual(2);
    // Another user's thread is not theirs to schedule into.
    await expect(
      sdk(KEYS.approver.key).crons.createForThread(thread.thread_id, AGENT, { schedule: '0 9 * * 1', input: human(POLICY) }),
    ).rejects.toThrow(/404|not_found/);
  });

  it('copies a thread: the copy starts from the same history and goes on apart from the original', async () => {
    const client = sdk();
    const thread: Thread = await client.threads.create({ metadata: { case: 'copy' } });
    await client.runs.wait(thread.thread_id, AGENT, { input: human(POLICY) });
    const copy: Thread = await client.threads.copy(thread.thread_id);
    expect(copy.thread_id).not.toBe(thread.thread_id);
    expect(copy.metadata).toMatchObject({ case: 'copy' });
    const before = ((await client.threads.getState(thread.thread_id)).values as Values).messages.length;
    expect(((await client.threads.getState(copy.thread_id)).values as Values).messages).toHaveLength(before);
    // A run on the copy continues its history; the original does not see it.
    await client.runs.wait(copy.thread_id, AGENT, { input: human(POLICY) });
    expect(((await client.threads.getState(copy.thread_id)).values as Values).messages.length).toBeGreaterThan(before);
    expect(((await client.threads.getState(thread.thread_id)).values as Values).messages).toHaveLength(before);
    // Another user cannot copy it.
    await expect(sdk(KEYS.approver.key).threads.copy(thread.thread_id)).rejects.toThrow(/404|not_found/);
  });

  it('refuses a missing or unknown key', async () => {
    await expect(sdk('not-a-key').assistants.search()).rejects.toThrow(/401|unauthorized/);
    const res = await fetch(`${fleet().api}/lg/assistants/search`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(401);
  });
});
