import { randomUUID } from 'node:crypto';
import { type Message, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { a2aClient, textMessage } from '../support/a2a-client.js';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
/** A user of the same tenant who neither owns the runs nor oversees the tenant. */
const NEIGHBOUR = { key: 'e2e-user-key-zhaoliu', tenantId: 'e2e', userId: 'zhaoliu', roles: ['user'] };

/**
 * Rein's A2A door driven by the official A2A SDK's client, built from Rein's Agent Card as
 * any A2A peer would: the key travels as a bearer token through the SDK's fetch hook.
 */
describe('A2A 1.0 with the @a2a-js/sdk client', () => {
  const fleet = fleetPerFile({ env: { REIN_API_KEYS: JSON.stringify([...Object.values(KEYS), NEIGHBOUR]) } });
  const base = () => `${fleet().api}/a2a/order-assistant/`;
  const clientFor = (key: string) => a2aClient(base(), key);

  const text = textMessage;
  const decision = (taskId: string, contextId: string, data: Record<string, unknown>): Message => ({
    ...text(''),
    taskId,
    contextId,
    parts: [{ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' }],
  });
  const send = (message: Message, returnImmediately = false) => ({
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  });
  const asTask = (result: Task | Message): Task => {
    if (!('status' in result)) throw new Error('expected a task, got a message');
    return result;
  };
  const collect = async (events: AsyncGenerator<StreamResponse>) => {
    const out: StreamResponse['payload'][] = [];
    for await (const e of events) out.push(e.payload);
    return out;
  };
  const states = (frames: StreamResponse['payload'][]) =>
    frames.map((f) => (f?.$case === 'task' ? f.value.status?.state : f?.$case === 'statusUpdate' ? f.value.status?.state : f?.$case));
  const approvalsOf = (task: Task) => {
    const part = task.status?.message?.parts.find((p) => p.content?.$case === 'data');
    if (part?.content?.$case !== 'data') throw new Error('no data part in the status message');
    return (part.content.value as { approvals: Array<{ approvalId: string; toolName: string; summary: string }> }).approvals;
  };

  it('serves an Agent Card the SDK builds a client from', async () => {
    const client = await clientFor(KEYS.user.key);
    const card = await client.getAgentCard();
    expect(card).toMatchObject({
      name: 'order-assistant',
      capabilities: { streaming: true, pushNotifications: true },
      supportedInterfaces: [
        { protocolBinding: 'JSONRPC', protocolVersion: '1.0', url: `${fleet().api}/a2a/order-assistant` },
        { protocolBinding: 'JSONRPC', protocolVersion: '0.3', url: `${fleet().api}/a2a/order-assistant` },
      ],
    });
    expect(card.skills[0]?.tags).toContain('create_ticket');
    expect(Object.keys(card.securitySchemes)).toEqual(['bearer']);
    const missing = await fetch(`${fleet().api}/a2a/no-such-agent/.well-known/agent-card.json`);
    expect(missing.status).toBe(404);
    // A name no agent can have (longer than any) is not found either, never the server's fault (503, logged).
    const impossible = `${fleet().api}/a2a/${'x'.repeat(65)}`;
    expect((await fetch(`${impossible}/.well-known/agent-card.json`)).status).toBe(404);
    const posted = await fetch(impossible, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.user.key}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
    });
    expect(posted.status).toBe(404);
  });

  it('answers a blocking send with the completed task, its answer an artifact; a retried message is the same task', async () => {
    const client = await clientFor(KEYS.user.key);
    const message = text('Where is order A12345?');
    const task = asTask(await client.sendMessage(send(message)));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const answer = task.artifacts[0]?.parts[0]?.content;
    expect(answer).toMatchObject({ $case: 'text', value: expect.stringContaining('A12345') });
    // The task is the run: the same id over /v1, the context its session.
    const run = await fleet().client().runs.get(task.id);
    expect(run).toMatchObject({ status: 'succeeded', agent: 'order-assistant', sessionId: task.contextId });
    expect(asTask(await client.getTask({ tenant: '', id: task.id }))).toMatchObject({
      id: task.id,
      status: { state: TaskState.TASK_STATE_COMPLETED },
    });
    // The same messageId again (a retry after a lost answer): the same task, no second run.
    expect(asTask(await client.sendMessage(send(message))).id).toBe(task.id);
  });

  it('streams a run to input-required, takes the caller’s approval as a data part, and streams it to completed', async () => {
    const client = await clientFor(KEYS.user.key);
    const first = await collect(client.sendMessageStream(send(text(LATE_ORDER))));
    expect(first[0]?.$case).toBe('task');
    expect(states(first).at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const taskId = first[0]?.$case === 'task' ? first[0].value.id : '';
    const parked = asTask(await client.getTask({ tenant: '', id: taskId }));
    const [approval] = approvalsOf(parked);
    expect(approval).toMatchObject({ toolName: 'create_ticket', approvalId: expect.any(String) });
    expect(parked.status?.message?.parts[0]?.content).toMatchObject({
      $case: 'text',
      value: expect.stringContaining(approval?.approvalId ?? ''),
    });

    // Someone else's answer is refused: a neighbour cannot see the task, another tenant neither; the approval waits.
    for (const key of [NEIGHBOUR.key, KEYS.other.key]) {
      const outsider = await clientFor(key);
      await expect(
        outsider.sendMessage(send(decision(taskId, parked.contextId, { approvalId: approval?.approvalId, decision: 'approve' }))),
      ).rejects.toMatchObject({ envelopeCode: -32001 });
      await expect(outsider.getTask({ tenant: '', id: taskId })).rejects.toMatchObject({ envelopeCode: -32001 });
    }
    expect((await fleet().client().runs.get(taskId)).status).toBe('pending_approval');
    // A message that is not a decision does not move it either.
    await expect(client.sendMessage(send(text('well?', { taskId, contextId: parked.contextId })))).rejects.toMatchObject({
      envelopeCode: -32602,
    });

    const resumed = await collect(
      client.sendMessageStream(
        send(decision(taskId, parked.contextId, { approvalId: approval?.approvalId, decision: 'approve', reason: 'ok' })),
      ),
    );
    expect(states(resumed).at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(resumed.some((f) => f?.$case === 'artifactUpdate')).toBe(true);
    const run = await fleet().client().runs.trace(taskId);
    const call = run.steps.flatMap((s) => s.toolCalls).find((c) => c.name === 'create_ticket');
    expect(call?.approval).toMatchObject({ status: 'approved', decidedBy: KEYS.user.userId, comment: 'ok' });
    // The same decision again is refused: it was decided once.
    await expect(
      client.sendMessage(send(decision(taskId, parked.contextId, { approvalId: approval?.approvalId, decision: 'approve' }))),
    ).rejects.toMatchObject({ envelopeCode: -32000 });
  });

  it('returns at once when asked, subscribes to the task, and cancels it (once)', async () => {
    const client = await clientFor(KEYS.user.key);
    const started = asTask(await client.sendMessage(send(text(LATE_ORDER), true)));
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED]).toContain(
      started.status?.state,
    );
    const followed = await collect(client.resubscribeTask({ tenant: '', id: started.id }));
    expect(states(followed).at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await fleet().client().runs.get(started.id)).status).toBe('cancelled');
    await expect(client.cancelTask({ tenant: '', id: started.id, metadata: undefined })).rejects.toMatchObject({ envelopeCode: -32002 });
    await expect(collect(client.resubscribeTask({ tenant: '', id: started.id }))).rejects.toMatchObject({ envelopeCode: -32004 });
  });

  it('makes one task of the same message sent twice at once, and refuses an approval of another task', async () => {
    const client = await clientFor(KEYS.user.key);
    const message = text(LATE_ORDER);
    const answers = await Promise.allSettled([client.sendMessage(send(message)), client.sendMessage(send(message))]);
    const ids = new Set(answers.flatMap((a) => (a.status === 'fulfilled' ? [asTask(a.value).id] : [])));
    const refused = answers.flatMap((a) => (a.status === 'rejected' ? [a.reason] : []));
    expect(ids.size).toBe(1);
    for (const reason of refused) expect(reason).toMatchObject({ data: { code: 'idempotency_key_in_flight' } });
    const [taskId] = [...ids] as [string];
    const task = asTask(await client.getTask({ tenant: '', id: taskId }));
    expect((await fleet().client().sessions.get(task.contextId)).runs).toHaveLength(1);

    // An approval id of the caller's own other task does not decide anything here.
    const other = asTask(await client.sendMessage(send(text(LATE_ORDER))));
    const [foreign] = approvalsOf(other);
    await expect(
      client.sendMessage(send(decision(taskId, task.contextId, { approvalId: foreign?.approvalId, decision: 'approve' }))),
    ).rejects.toMatchObject({ envelopeCode: -32001 });
    expect((await fleet().client().runs.get(other.id)).status).toBe('pending_approval');
  });

  it('ends an input the guards refuse as rejected', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage(send(text('write me a python script'))));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
  });

  it('refuses push configs to private addresses (REIN_WEBHOOK_ALLOW_PRIVATE is off), inline ones before any run starts', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage(send(text('Where is order A12345?'))));
    const push = (url: string, taskId = task.id) => ({ tenant: '', id: '', taskId, url, token: 'tok', authentication: undefined });
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://[::1]/hook',
      'http://169.254.169.254/latest',
      'http://10.0.0.1/x',
      'http://localhost/x',
    ])
      await expect(client.createTaskPushNotificationConfig(push(url))).rejects.toMatchObject({
        envelopeCode: -32602,
        data: { code: 'webhook_url_refused' },
      });
    const contextId = `ctx-${randomUUID()}`;
    const message = text(LATE_ORDER, { contextId });
    await expect(
      client.sendMessage({
        ...send(message),
        configuration: { ...send(message).configuration, taskPushNotificationConfig: push('http://127.0.0.1:9/', '') },
      }),
    ).rejects.toMatchObject({ envelopeCode: -32602, data: { code: 'webhook_url_refused' } });
    await expect(fleet().client().sessions.get(contextId)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses callers without a key, malformed requests and unknown methods', async () => {
    const rpc = async (body: unknown, key = KEYS.user.key) => {
      const res = await fetch(`${fleet().api}/a2a/order-assistant`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as { error?: { code: unknown } } };
    };
    expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, '')).status).toBe(401);
    expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'NoSuchMethod' })).body.error?.code).toBe(-32601);
    expect((await rpc([{ jsonrpc: '2.0', id: 1, method: 'GetTask' }])).body.error?.code).toBe(-32600);
    expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: '../x' } })).body.error?.code).toBe(-32602);
    const hugeParts = Array.from({ length: 65 }, () => ({ text: 'x' }));
    const tooMany = await rpc({
      jsonrpc: '2.0',
      id: 2,
      method: 'SendMessage',
      params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: hugeParts } },
    });
    expect(tooMany.body.error?.code).toBe(-32602);
    const huge = await rpc({
      jsonrpc: '2.0',
      id: 3,
      method: 'SendMessage',
      params: { message: { messageId: 'm2', parts: [{ text: 'x'.repeat(9000) }] } },
    });
    expect(huge.body.error?.code).toBe(-32602);
  });
});
