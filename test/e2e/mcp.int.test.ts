import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { McpFixtureState, startMcpFixtureHttp, startTestRedis, type TestRedis } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

const APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'mcp-app.mjs');

let redis: TestRedis;
let client: Redis;
let fleet: Fleet | undefined;
let state: McpFixtureState;
let mcp: { url: string; close(): Promise<void> };
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
});
beforeEach(async () => {
  state = new McpFixtureState();
  mcp = await startMcpFixtureHttp(state);
  fleet = await startFleet({ redisUrl: redis.url, env: { REIN_APP: APP, MCP_FIXTURE_URL: mcp.url } });
});
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  await mcp.close();
  await client.flushdb();
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

type Trace = { steps: Array<{ toolCalls: Array<{ name: string; outcome: string; observation: string }> }> };
const toolCalls = async (f: Fleet, id: string) =>
  ((await f.callApi('GET', `/v1/runs/${id}/trace`)).body as Trace).steps.flatMap((s) => s.toolCalls);

async function submit(f: Fleet, agent: string, input: string) {
  const submitted = await f.callApi('POST', '/v1/runs', KEYS.user.key, { agent, input });
  expect(submitted.status).toBe(202);
  const id = submitted.body.id as string;
  const parked = await f.waitForRun(id, (r) => r.status !== 'queued' && r.status !== 'running');
  return { id, parked };
}

const approvalOf = (run: { pendingApprovals?: unknown }) => (run.pendingApprovals as Array<{ id: string }>)[0]?.id as string;

describe('MCP tools on the stock fleet', () => {
  it('asks a supervisor (or higher) before a destructive call, and calls only once approved', async () => {
    const f = fleet as Fleet;
    const { id, parked } = await submit(f, 'note-deleter', 'Delete the note "welcome"');
    expect(parked).toMatchObject({
      status: 'pending_approval',
      pendingApprovals: [{ toolName: 'notes__delete_note', risk: 'critical', requiredRole: 'supervisor', arguments: { id: 'welcome' } }],
    });
    expect(state.calls).toEqual([]); // nothing reached the server before approval

    const approval = approvalOf(parked);
    expect((await f.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.approver.key, {})).status).toBe(403);
    expect((await f.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.admin.key, {})).status).toBe(200);

    const done = await f.waitForRun(id, (r) => r.status === 'succeeded');
    expect(state.effects).toEqual([{ tool: 'delete_note', args: { id: 'welcome' }, key: expect.stringMatching(new RegExp(`^${id}:`)) }]);
    expect(state.notes.has('welcome')).toBe(false);
    expect(done.finalAnswer).toContain('deleted note welcome');
  });

  it('checks an approver edit against the server schema, and runs the edited call', async () => {
    const f = fleet as Fleet;
    const { id, parked } = await submit(f, 'note-appender', 'Append "hello" to the note');
    const approval = approvalOf(parked);
    const bad = await f.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.approver.key, { arguments: { id: 7, text: 'x' } });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_arguments' } } });
    expect(bad.body.error.message).toContain('id: must be string');
    const edited = { id: 'reviewed', text: 'edited by lisi' };
    expect((await f.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.approver.key, { arguments: edited })).status).toBe(200);
    await f.waitForRun(id, (r) => r.status === 'succeeded');
    expect(state.effects).toEqual([{ tool: 'append_note', args: edited, key: expect.stringMatching(new RegExp(`^${id}:`)) }]);
  });

  it('never calls the tool after a rejection', async () => {
    const f = fleet as Fleet;
    const { id, parked } = await submit(f, 'note-deleter', 'Delete the note "welcome"');
    const approval = approvalOf(parked);
    const rejected = await f.callApprover('POST', `/v1/approvals/${approval}/reject`, KEYS.admin.key, { reason: 'keep it' });
    expect(rejected.status).toBe(200);
    await f.waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed');
    expect(state.calls).toEqual([]);
    expect(state.notes.has('welcome')).toBe(true);
    expect(await toolCalls(f, id)).toEqual([expect.objectContaining({ name: 'notes__delete_note', outcome: 'rejected' })]);
  });

  it('runs a tool over stdio in every worker', async () => {
    const f = fleet as Fleet;
    const { id, parked } = await submit(f, 'local-reader', 'Read the note "welcome"');
    expect(parked.status).toBe('succeeded');
    expect(await toolCalls(f, id)).toEqual([expect.objectContaining({ name: 'local__read_note', outcome: 'ok' })]);
    expect(parked.finalAnswer).toContain('Hello from the fixture');
  });

  /** Approves the run's write, lets the server apply it, kills every worker before the reply, starts a fresh one. */
  async function killBetweenIntentAndResult(f: Fleet, agent: string) {
    const { id, parked } = await submit(f, agent, 'Append "hello" to the note');
    state.holdWrites();
    expect((await f.callApprover('POST', `/v1/approvals/${approvalOf(parked)}/approve`, KEYS.approver.key, {})).status).toBe(200);
    for (let i = 0; i < 600 && state.effects.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(state.effects).toHaveLength(1); // the effect happened; its reply has not left the server
    for (const worker of f.workers) worker.kill('SIGKILL');
    state.release();
    await f.startWorker();
    return { id, done: await f.waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed') };
  }

  it('applies an idempotent write exactly once after its worker dies mid-call (the key reaches the server again)', async () => {
    const f = fleet as Fleet;
    const { id, done } = await killBetweenIntentAndResult(f, 'note-appender');
    expect(done.status).toBe('succeeded');
    expect(state.effects).toHaveLength(1);
    const sent = state.calls.filter((c) => c.tool === 'append_note');
    expect(sent).toHaveLength(2); // sent again after the crash, de-duplicated by the server
    expect(sent[1]?.key).toBe(sent[0]?.key);
    expect(state.notes.get('hello')).toBe('hello');
    expect(await toolCalls(f, id)).toEqual([expect.objectContaining({ name: 'notes__append_note', outcome: 'ok' })]);
  });

  it('without the opt-in, reports the cut-off write uncertain and never sends it again', async () => {
    const f = fleet as Fleet;
    const { id } = await killBetweenIntentAndResult(f, 'strict-appender');
    expect(state.calls.filter((c) => c.tool === 'append_note')).toHaveLength(1);
    expect(state.effects).toHaveLength(1);
    expect(await toolCalls(f, id)).toEqual([expect.objectContaining({ name: 'strict__append_note', outcome: 'uncertain' })]);
  });
});
