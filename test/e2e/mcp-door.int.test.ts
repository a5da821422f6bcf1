import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

/** Rein's agents as MCP tools, driven by the official MCP SDK's client over Streamable HTTP with a Rein key. */
describe('POST /mcp with the @modelcontextprotocol/sdk client', () => {
  // Each model reply takes a moment, so a call is still running when the client cancels it.
  const CONSOLE = 'https://approvals.example.test';
  const fleet = fleetPerFile({ modelLatencyMs: 300, env: { REIN_CONSOLE_URL: CONSOLE } });
  const open: Client[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });
  const connect = async (key = KEYS.user.key) => {
    const client = new Client({ name: 'rein-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${fleet().api}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    open.push(client);
    return client;
  };
  const textOf = (result: Record<string, unknown>) =>
    ((result.content ?? []) as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('\n');

  it('lists one tool per agent, named as the agent', async () => {
    const { tools } = await (await connect()).listTools();
    const tool = tools.find((t) => t.name === 'order-assistant');
    expect(tool?.inputSchema).toMatchObject({ type: 'object', required: ['input'] });
  });

  it('runs the agent and answers with its final answer, reporting steps as progress', async () => {
    const client = await connect();
    const progress: number[] = [];
    const result = await client.callTool({ name: 'order-assistant', arguments: { input: 'Where is order A12345?' } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain('A12345');
    const { runId } = (result._meta?.['rein/run'] ?? {}) as { runId: string };
    expect(await fleet().client().runs.get(runId)).toMatchObject({ status: 'succeeded', agent: 'order-assistant' });
    expect(progress.length).toBeGreaterThan(0);
    // MCP: progress increases with each notification.
    expect(progress.every((p, i) => i === 0 || p > (progress[i - 1] ?? p))).toBe(true);
  });

  it('answers a run parked for approval with what a person must do, without holding the call', async () => {
    const result = await (await connect()).callTool({ name: 'order-assistant', arguments: { input: LATE_ORDER } });
    expect(result.isError).toBe(true);
    const meta = result._meta?.['rein/run'] as { runId: string; status: string; approvals: Array<{ id: string; consoleUrl: string }> };
    expect(meta.status).toBe('pending_approval');
    // Where a person decides it: the console's page for the approval (REIN_CONSOLE_URL), never a link that decides.
    const page = `${CONSOLE}/console?approval=${meta.approvals[0]?.id}`;
    expect(meta.approvals[0]?.consoleUrl).toBe(page);
    expect(textOf(result)).toContain(page);
    const run = await fleet().client().runs.get(meta.runId);
    expect(run.pendingApprovals.map((a) => a.id)).toEqual(meta.approvals.map((a) => a.id));
    // The approval is Rein's like any other: decided on the approver, the run goes on.
    await fleet()
      .client()
      .approvals.approve(meta.approvals[0]?.id ?? '');
    await fleet().waitForRun(meta.runId, (r) => r.status === 'succeeded');
  });

  it('runs a call as an MCP task the client polls: the task is the run, parked for a person, then completed', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'order-assistant')?.execution).toEqual({ taskSupport: 'optional' });
    const created = await client.request(
      { method: 'tools/call', params: { name: 'order-assistant', arguments: { input: LATE_ORDER }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    expect(await fleet().client().runs.get(taskId)).toMatchObject({ agent: 'order-assistant' });
    let task = await client.experimental.tasks.getTask(taskId);
    for (let i = 0; task.status === 'working' && i < 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      task = await client.experimental.tasks.getTask(taskId);
    }
    expect(task.status).toBe('input_required');
    const [approval] = (await fleet().client().runs.get(taskId)).pendingApprovals;
    expect(task.statusMessage).toContain(`${CONSOLE}/console?approval=${approval?.id}`);
    // Another user's client does not see the task; the approval is decided by a person as ever.
    const outsider = await connect(KEYS.other.key);
    await expect(outsider.experimental.tasks.getTask(taskId)).rejects.toThrow(/not found/i);
    await expect(outsider.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/not found/i);
    await expect(outsider.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/not found/i);
    expect((await fleet().client().runs.get(taskId)).status).toBe('pending_approval');
    // tasks/result waits while the task waits for a person, and answers once it is over.
    const held = client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    await fleet()
      .client(KEYS.approver.key)
      .approvals.approve(approval?.id ?? '');
    await fleet().waitForRun(taskId, (r) => r.status === 'succeeded');
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('completed');
    const result = await held;
    expect(textOf(result)).toContain('2024001');

    // A task the client cancels cancels its run.
    const second = await client.request(
      { method: 'tools/call', params: { name: 'order-assistant', arguments: { input: LATE_ORDER }, task: {} } },
      CreateTaskResultSchema,
    );
    expect((await client.experimental.tasks.cancelTask(second.task.taskId)).status).toBe('cancelled');
    expect((await fleet().client().runs.get(second.task.taskId)).status).toBe('cancelled');
  });

  it('cancels the run when the client cancels the call', async () => {
    const client = await connect();
    const abort = new AbortController();
    const call = client.callTool({ name: 'order-assistant', arguments: { input: LATE_ORDER } }, undefined, {
      signal: abort.signal,
      onprogress: () => abort.abort(),
    });
    await expect(call).rejects.toThrow();
    // The run of the cancelled call is the caller's newest one.
    const { runs } = await fleet().client().runs.list({ limit: 1 });
    const ended = await fleet().waitForRun(runs[0]?.id ?? '', (r) => r.status === 'cancelled' || r.status === 'pending_approval');
    expect(ended.status).toBe('cancelled');
  });

  it("one client's cancellation never cancels another client's call that has the same request id", async () => {
    // Two fresh clients of one user number their requests alike: each one's first call has the same id.
    const [first, second] = [await connect(), await connect()];
    const abort = new AbortController();
    let secondCall: Promise<{ _meta?: Record<string, unknown> }> | undefined;
    const started = new Promise<void>((resolve) => {
      const firstCall = first.callTool({ name: 'order-assistant', arguments: { input: LATE_ORDER } }, undefined, {
        signal: abort.signal,
        onprogress: () => {
          // The first call runs; the second starts beside it, and once it runs too the first is cancelled.
          secondCall ??= second.callTool({ name: 'order-assistant', arguments: { input: LATE_ORDER } }, undefined, {
            onprogress: () => {
              abort.abort();
              resolve();
            },
          });
        },
      });
      firstCall.catch(() => undefined);
    });
    await started;
    const answered = await secondCall;
    expect(answered?._meta?.['rein/run']).toMatchObject({ status: 'pending_approval' });
  });

  it('refuses a JSON-RPC batch, whose calls would all be held on one stream slot, and starts none of them', async () => {
    // Shapes the SDK's client would not send (MCP has no batches since 2025-06-18): JSON-RPC straight.
    const { runs: before } = await fleet().client().runs.list({ limit: 1 });
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'order-assistant', arguments: { input: 'Where is A12345?' } },
    });
    const res = await fetch(`${fleet().api}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${KEYS.user.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify([call(1), call(2)]),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: -32600 } });
    const { runs: after } = await fleet().client().runs.list({ limit: 1 });
    expect(after[0]?.id).toBe(before[0]?.id);
  });

  it('refuses a caller without a key and an unknown tool; answers bad arguments with a result a model can correct', async () => {
    await expect(connect('not-a-key')).rejects.toThrow();
    const client = await connect();
    await expect(client.callTool({ name: 'no-such-agent', arguments: { input: 'x' } })).rejects.toThrow(/no tool/);
    const { runs: before } = await fleet().client().runs.list({ limit: 1 });
    // MCP 2025-11-25: an input validation error is a tool execution error (isError), not a protocol error.
    const empty = await client.callTool({ name: 'order-assistant', arguments: { input: '' } });
    expect(empty.isError).toBe(true);
    expect(textOf(empty)).toMatch(/^invalid_request: input/);
    const extra = await client.callTool({ name: 'order-assistant', arguments: { input: 'x', extra: 1 } });
    expect(extra.isError).toBe(true);
    expect(textOf(extra)).toMatch(/extra/);
    // Asked as a task, there is no task to carry that result: a JSON-RPC error says what is wrong.
    await expect(
      client.request(
        { method: 'tools/call', params: { name: 'order-assistant', arguments: { input: '' }, task: {} } },
        CreateTaskResultSchema,
      ),
    ).rejects.toThrow(/invalid_request: input/);
    // Neither started a run.
    const { runs: after } = await fleet().client().runs.list({ limit: 1 });
    expect(after[0]?.id).toBe(before[0]?.id);
  });
});
