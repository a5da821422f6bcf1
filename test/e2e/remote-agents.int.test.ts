import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskState } from '@a2a-js/sdk';
import { runKeys } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aClient, textMessage } from '../support/a2a-client.js';
import { type RemoteAgentServer, startRemoteAgent } from '../support/a2a-remote-agent.js';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

const APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'remote-agents-app.mjs');

type Call = { name: string; outcome: string; observation: string; arguments: unknown };
type Trace = { steps: Array<{ toolCalls: Call[] }> };

/**
 * Remote A2A agents as governed tools, on the stock fleet: the remote agent is the official
 * SDK's server (DefaultRequestHandler over express), Rein calls it with the SDK's client.
 */
describe('remote A2A agents as tools (call_<name>)', () => {
  let redis: TestRedis;
  let client: Redis;
  let remote: RemoteAgentServer;
  let fleet: Fleet;
  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
    remote = await startRemoteAgent();
    fleet = await startFleet({
      redisUrl: redis.url,
      // The remote agent listens on 127.0.0.1: an in-cluster agent, which the operator allows.
      env: { REIN_APP: APP, REMOTE_AGENT_URL: remote.url, REIN_REMOTE_AGENT_ALLOW_PRIVATE: 'true', REIN_JOB_LOCK_MS: '5000' },
    });
  });
  afterAll(async () => {
    await fleet?.stop();
    await remote?.close();
    client?.disconnect();
    await redis?.stop();
  });

  const submit = async (agent: string, input: string) => {
    const res = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { agent, input });
    expect(res.status).toBe(202);
    return res.body.id as string;
  };
  const callsOf = async (id: string) =>
    ((await fleet.callApi('GET', `/v1/runs/${id}/trace`, KEYS.admin.key)).body as Trace).steps.flatMap((s) => s.toolCalls);
  const until = async (what: () => Promise<boolean> | boolean) => {
    const end = Date.now() + 30_000;
    while (!(await what())) {
      if (Date.now() > end) throw new Error('never happened');
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const messagesFor = (id: string) => remote.messages.filter((m) => m.messageId.startsWith(`${id}:`));

  it('calls the remote agent once, with its credentials, and answers with what it said', async () => {
    const id = await submit('asker', 'Ask the helper "what is the ledger balance?"');
    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed');
    expect(done.status).toBe('succeeded');
    expect(done.finalAnswer).toContain('helper answered: what is the ledger balance?');
    // The message id is the call's idempotency key: one message, one remote task.
    expect(messagesFor(id)).toEqual([
      { messageId: expect.stringMatching(new RegExp(`^${id}:\\d+:`)), text: 'what is the ledger balance?', taskId: expect.any(String) },
    ]);
    expect(remote.authorizations).toContain('Bearer helper-secret');
    const [call] = await callsOf(id);
    expect(call).toMatchObject({ name: 'call_helper', outcome: 'ok' });
  });

  it('asks a supervisor before a gated call, sends nothing until then, and sends the approved input', async () => {
    const id = await submit('careful-asker', 'Ask "close the ledger for today"');
    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval');
    expect(parked.pendingApprovals?.[0]).toMatchObject({
      toolName: 'call_gated',
      requiredRole: 'supervisor',
      summary: 'Ask the remote agent gated: close the ledger for today',
      arguments: { input: 'close the ledger for today' },
    });
    expect(messagesFor(id)).toEqual([]);
    const approval = parked.pendingApprovals?.[0]?.id as string;
    expect((await fleet.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.approver.key, {})).status).toBe(403);
    const edited = { input: 'close the ledger at noon' };
    expect((await fleet.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.admin.key, { arguments: edited })).status).toBe(200);
    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded');
    expect(messagesFor(id).map((m) => m.text)).toEqual(['close the ledger at noon']);
    expect(done.finalAnswer).toContain('helper answered: close the ledger at noon');
  });

  it('ends the call with the remote agent’s question instead of waiting, and reports a remote failure as one', async () => {
    const asked = await submit('asker', 'Ask the helper "a question about my order"');
    const askedDone = await fleet.waitForRun(asked, (r) => r.status === 'succeeded' || r.status === 'failed');
    const [question] = await callsOf(asked);
    expect(question).toMatchObject({ name: 'call_helper', outcome: 'ok', observation: expect.stringContaining('Which order number?') });
    expect(askedDone.status).toBe('succeeded');

    const failing = await submit('asker', 'Ask the helper "fail please"');
    await fleet.waitForRun(failing, (r) => r.status === 'succeeded' || r.status === 'failed');
    const [failed] = await callsOf(failing);
    expect(failed).toMatchObject({ outcome: 'error', observation: expect.stringContaining('the ledger is closed today') });
  });

  it('asks a person the remote agent’s question: the run parks, an approver’s answer goes into the same task once, and the call goes on', async () => {
    const id = await submit('curious-asker', 'Ask the curious helper "a question about my order"');
    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval' || r.status === 'succeeded');
    expect(parked.status).toBe('pending_approval');
    const question = parked.pendingApprovals?.[0];
    expect(question).toMatchObject({
      kind: 'input',
      toolName: 'call_curious',
      requiredRole: 'approver',
      summary: 'The remote agent curious asks: Which order number?',
      arguments: { input: '' },
    });
    const approval = question?.id as string;
    // The approver door lists it like any approval of the tenant.
    const listed = await fleet.callApprover('GET', '/v1/approvals?status=pending', KEYS.approver.key);
    expect(listed.body.approvals.map((a: { id: string }) => a.id)).toContain(approval);
    const [first] = messagesFor(id);
    expect(messagesFor(id)).toHaveLength(1);
    // The requester answers nothing (an answer is an edit: four eyes); an approval as proposed holds no answer.
    const answer = { input: 'order 42' };
    const approve = async (key: string, body: object) =>
      (await fleet.callApprover('POST', `/v1/approvals/${approval}/approve`, key, body)).status;
    expect(await approve(KEYS.user.key, { arguments: answer })).toBe(403);
    expect(await approve(KEYS.approver.key, {})).toBe(400);
    expect(await approve(KEYS.approver.key, { arguments: answer })).toBe(200);
    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed');
    expect(done.status).toBe('succeeded');
    expect(done.finalAnswer).toContain('helper answered: order 42');
    // One follow-up, into the same task, its id the call's key and the approval's.
    expect(messagesFor(id)).toEqual([first, { messageId: `${first?.messageId}:${approval}`, text: 'order 42', taskId: first?.taskId }]);
    const [call] = await callsOf(id);
    expect(call).toMatchObject({ name: 'call_curious', outcome: 'ok', observation: 'helper answered: order 42' });
  });

  it('a second question parks again; a rejected question cancels the remote task and ends the call', async () => {
    const id = await submit('curious-asker', 'Ask the curious helper "a question about my order"');
    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval');
    const first = parked.pendingApprovals?.[0]?.id as string;
    const again = { input: 'another question, please' };
    expect((await fleet.callApprover('POST', `/v1/approvals/${first}/approve`, KEYS.approver.key, { arguments: again })).status).toBe(200);
    const reparked = await fleet.waitForRun(
      id,
      (r) => r.status === 'pending_approval' && ![undefined, first].includes(r.pendingApprovals?.[0]?.id),
    );
    const second = reparked.pendingApprovals?.[0];
    expect(second).toMatchObject({ kind: 'input', summary: 'The remote agent curious asks: Which order number?' });
    const taskId = messagesFor(id)[0]?.taskId as string;
    const rejected = await fleet.callApprover('POST', `/v1/approvals/${second?.id}/reject`, KEYS.approver.key, { reason: 'no such order' });
    expect(rejected.status).toBe(200);
    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed');
    expect(done.status).toBe('succeeded');
    expect(remote.cancelled).toContain(taskId);
    expect(messagesFor(id).map((m) => m.text)).toEqual(['a question about my order', 'another question, please']);
    const [call] = await callsOf(id);
    expect(call).toMatchObject({
      name: 'call_curious',
      outcome: 'error',
      observation: expect.stringContaining(`was not answered (lisi declined to answer: no such order); its task ${taskId} was cancelled`),
    });
    expect(await client.exists(runKeys(id).remoteTasks)).toBe(0);
  });

  it('the question reaches a caller through the A2A door like any approval; the run’s end cancels the remote task', async () => {
    const door = await a2aClient(`${fleet.api}/a2a/curious-asker/`, KEYS.user.key);
    const task = await door.sendMessage({
      tenant: '',
      message: textMessage('Ask the curious helper "a question about my order"'),
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
      metadata: undefined,
    });
    if (!('status' in task)) throw new Error('expected a task');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const data = task.status?.message?.parts.find((p) => p.content?.$case === 'data')?.content;
    expect(data).toMatchObject({
      $case: 'data',
      value: { approvals: [{ toolName: 'call_curious', summary: 'The remote agent curious asks: Which order number?' }] },
    });
    // A run that ends while its question waits cancels the remote task.
    expect((await fleet.callApi('POST', `/v1/runs/${task.id}/cancel`, KEYS.user.key)).status).toBe(200);
    const remoteTask = messagesFor(task.id)[0]?.taskId as string;
    await until(() => remote.stateOf(remoteTask) === TaskState.TASK_STATE_CANCELED);
  });

  it('a worker killed while it waits on the remote task: another resumes by reading the task, never sending again', async () => {
    const id = await submit('asker', 'Ask the helper "hold the line"');
    await until(() => messagesFor(id).length === 1);
    // The task id is remembered in the ledger before the call waits on it.
    await until(async () => Boolean(JSON.parse((await client.hvals(runKeys(id).effects))[0] ?? '{}').handle));
    const [effect] = (await client.hvals(runKeys(id).effects)).map((e) => JSON.parse(e) as { state: string; handle: string });
    expect(effect).toMatchObject({ state: 'intent', handle: expect.any(String) });
    for (const w of fleet.workers) w.kill('SIGKILL');
    await fleet.startWorker();
    remote.release(effect?.handle as string);
    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed', 90_000);
    expect(done.status).toBe('succeeded');
    expect(done.finalAnswer).toContain('helper answered: hold the line');
    expect(messagesFor(id)).toHaveLength(1);
  });

  it('a worker killed after it sent the answer: another resumes by reading the task, never sending the answer again', async () => {
    const id = await submit('curious-asker', 'Ask the curious helper "a question about my order"');
    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval');
    const approval = parked.pendingApprovals?.[0]?.id as string;
    const answer = { arguments: { input: 'hold on: order 42' } };
    expect((await fleet.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.approver.key, answer)).status).toBe(200);
    await until(() => messagesFor(id).length === 2);
    // The ledger says the answer was sent before the call waits on the task again.
    await until(async () => Boolean(JSON.parse((await client.hvals(runKeys(id).effects))[0] ?? '{}').handle?.includes('"sent"')));
    for (const w of fleet.workers) w.kill('SIGKILL');
    await fleet.startWorker();
    remote.release(messagesFor(id)[0]?.taskId as string);
    const done = await fleet.waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed', 90_000);
    expect(done.status).toBe('succeeded');
    expect(done.finalAnswer).toContain('helper answered: hold on: order 42');
    expect(messagesFor(id)).toHaveLength(2);
  });

  it('cancelling the Rein run cancels the remote task', async () => {
    const id = await submit('asker', 'Ask the helper "hold until cancelled"');
    await until(() => messagesFor(id).length === 1);
    await until(async () => (await client.hlen(runKeys(id).remoteTasks)) === 1);
    const taskId = JSON.parse((await client.hvals(runKeys(id).remoteTasks))[0] as string).taskId as string;
    expect((await fleet.callApi('POST', `/v1/runs/${id}/cancel`, KEYS.user.key)).status).toBe(200);
    await until(() => remote.cancelled.includes(taskId));
    await until(() => remote.stateOf(taskId) === TaskState.TASK_STATE_CANCELED);
    expect((await fleet.client().runs.get(id)).status).toBe('cancelled');
    // Nothing left to cancel, and no second message.
    await until(async () => (await client.exists(runKeys(id).remoteTasks)) === 0);
    expect(messagesFor(id)).toHaveLength(1);
  });
});
