import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

/** Rein's agents as MCP tools, driven by the official MCP SDK's client over Streamable HTTP with a Rein key. */
describe('POST /mcp with the @modelcontextprotocol/sdk client', () => {
  // Each model reply takes a moment, so a call is still running when the client cancels it.
  const fleet = fleetPerFile({ modelLatencyMs: 300 });
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
    const meta = result._meta?.['rein/run'] as { runId: string; status: string; approvals: Array<{ id: string }> };
    expect(meta.status).toBe('pending_approval');
    expect(textOf(result)).toContain(meta.approvals[0]?.id);
    const run = await fleet().client().runs.get(meta.runId);
    expect(run.pendingApprovals.map((a) => a.id)).toEqual(meta.approvals.map((a) => a.id));
    // The approval is Rein's like any other: decided on the approver, the run goes on.
    await fleet()
      .client()
      .approvals.approve(meta.approvals[0]?.id ?? '');
    await fleet().waitForRun(meta.runId, (r) => r.status === 'succeeded');
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
    // Neither started a run.
    const { runs: after } = await fleet().client().runs.list({ limit: 1 });
    expect(after[0]?.id).toBe(before[0]?.id);
  });
});
