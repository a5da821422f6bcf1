import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Message, MessageSendParams, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from 'a2a-sdk-v03';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from 'a2a-sdk-v03/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

/** What a v0.3 stream yields (the client's own name for it is not exported). */
type A2AStreamEventData = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent;

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
/** A user of the same tenant who neither owns the runs nor oversees the tenant. */
const NEIGHBOUR = { key: 'e2e-user-key-zhaoliu', tenantId: 'e2e', userId: 'zhaoliu', roles: ['user'] };

/** A receiver on loopback that keeps what it is sent. */
function startReceiver() {
  const got: Array<{ path: string; contentType: string; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      got.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body });
      res.writeHead(204).end();
    });
  });
  return new Promise<{ url: string; got: typeof got; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, close: () => server.close() }),
    ),
  );
}

/**
 * Rein's A2A door driven by the last v0.3 release of the A2A SDK (`@a2a-js/sdk@0.3.14`, as
 * `a2a-sdk-v03`): the client v0.3 users run, built from the card it reads at the agent's
 * well-known path, speaking v0.3 method names and shapes to the same endpoint as 1.0.
 */
describe('A2A v0.3 with the @a2a-js/sdk 0.3 client', () => {
  // Push notifications go to a receiver on loopback, as the 1.0 push tests' do (private addresses allowed).
  const fleet = fleetPerFile({
    env: { REIN_API_KEYS: JSON.stringify([...Object.values(KEYS), NEIGHBOUR]), REIN_WEBHOOK_ALLOW_PRIVATE: 'true' },
  });
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());
  const base = () => `${fleet().api}/a2a/order-assistant`;
  const clientFor = (key: string) => {
    const fetchImpl: typeof fetch = (url, init) =>
      fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}` } });
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    });
    // Mind the trailing slash: the SDK resolves `.well-known/agent-card.json` against it.
    return new ClientFactory(options).createFromUrl(`${base()}/`);
  };

  const text = (t: string, extra: Partial<Message> = {}): Message => ({
    kind: 'message',
    messageId: randomUUID(),
    role: 'user',
    parts: [{ kind: 'text', text: t }],
    ...extra,
  });
  const decision = (taskId: string, contextId: string, data: Record<string, unknown>): Message => ({
    ...text(''),
    taskId,
    contextId,
    parts: [{ kind: 'data', data }],
  });
  const send = (message: Message, blocking = true): MessageSendParams => ({ message, configuration: { blocking } });
  const asTask = (result: Task | Message): Task => {
    if (result.kind !== 'task') throw new Error('expected a task, got a message');
    return result;
  };
  const collect = async (events: AsyncGenerator<A2AStreamEventData>) => {
    const out: A2AStreamEventData[] = [];
    for await (const e of events) out.push(e);
    return out;
  };
  const states = (events: A2AStreamEventData[]) =>
    events.map((e) => (e.kind === 'task' || e.kind === 'status-update' ? e.status.state : e.kind));
  const approvalsOf = (task: Task) => {
    const part = task.status.message?.parts.find((p) => p.kind === 'data');
    if (part?.kind !== 'data') throw new Error('no data part in the status message');
    return (part.data as { approvals: Array<{ approvalId: string; toolName: string }> }).approvals;
  };
  /** The JSON-RPC error code a v0.3 client call was refused with (a stream's error is the cause of the one it throws). */
  const codeOf = async (call: Promise<unknown>): Promise<unknown> => {
    const err = (await call.then(
      () => null,
      (e: unknown) => e,
    )) as { errorResponse?: { error: { code: number } }; cause?: { errorResponse?: { error: { code: number } } } } | null;
    return (err?.errorResponse ?? err?.cause?.errorResponse)?.error.code;
  };

  it('reads a v0.3 card at the well-known path and builds its client from it; a 1.0 client still gets 1.0’s', async () => {
    const client = await clientFor(KEYS.user.key);
    const card = await client.getAgentCard();
    expect(card).toMatchObject({
      name: 'order-assistant',
      protocolVersion: '0.3',
      url: base(),
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, pushNotifications: true },
      securitySchemes: { bearer: { type: 'http', scheme: 'Bearer' } },
      security: [{ bearer: [] }],
    });
    const v1 = await fetch(`${base()}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
    const v1Card = (await v1.json()) as Record<string, unknown>;
    expect(v1Card.url).toBeUndefined();
    expect(v1Card.supportedInterfaces).toEqual([
      { url: base(), protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: base(), protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
  });

  it('answers a blocking message/send with the completed task; tasks/get reads it; a retried message is the same task', async () => {
    const client = await clientFor(KEYS.user.key);
    const message = text('Where is order A12345?');
    const task = asTask(await client.sendMessage(send(message)));
    expect(task.status.state).toBe('completed');
    expect(task.artifacts?.[0]?.parts[0]).toMatchObject({ kind: 'text', text: expect.stringContaining('A12345') });
    const run = await fleet().client().runs.get(task.id);
    expect(run).toMatchObject({ status: 'succeeded', agent: 'order-assistant', sessionId: task.contextId });
    expect(await client.getTask({ id: task.id })).toMatchObject({ kind: 'task', id: task.id, status: { state: 'completed' } });
    expect(asTask(await client.sendMessage(send(message))).id).toBe(task.id);
  });

  it('streams to input-required; an outsider’s answer is refused; the owner’s data part (it may decide) streams it to completed', async () => {
    const client = await clientFor(KEYS.user.key);
    const first = await collect(client.sendMessageStream(send(text(LATE_ORDER))));
    expect(first[0]?.kind).toBe('task');
    expect(states(first).at(-1)).toBe('input-required');
    const taskId = first[0]?.kind === 'task' ? first[0].id : '';
    const parked = await client.getTask({ id: taskId });
    const [approval] = approvalsOf(parked);
    expect(approval).toMatchObject({ toolName: 'create_ticket', approvalId: expect.any(String) });

    // Neither a neighbour of the tenant nor another tenant sees the task: their answers are refused, the approval waits.
    for (const key of [NEIGHBOUR.key, KEYS.other.key]) {
      const outsider = await clientFor(key);
      const answer = decision(taskId, parked.contextId, { approvalId: approval?.approvalId, decision: 'approve' });
      expect(await codeOf(outsider.sendMessage(send(answer)))).toBe(-32001);
      expect(await codeOf(outsider.getTask({ id: taskId }))).toBe(-32001);
      expect(await codeOf(outsider.cancelTask({ id: taskId }))).toBe(-32001);
    }
    expect((await fleet().client().runs.get(taskId)).status).toBe('pending_approval');

    const resumed = await collect(
      client.sendMessageStream(
        send(decision(taskId, parked.contextId, { approvalId: approval?.approvalId, decision: 'approve', reason: 'ok' })),
      ),
    );
    expect(states(resumed).at(-1)).toBe('completed');
    // v0.3's `final` marks the update that ends the task.
    for (const e of resumed) if (e.kind === 'status-update') expect(e.final).toBe(e.status.state === 'completed');
    expect(resumed.some((e) => e.kind === 'artifact-update')).toBe(true);
    const trace = await fleet().client().runs.trace(taskId);
    const call = trace.steps.flatMap((s) => s.toolCalls).find((c) => c.name === 'create_ticket');
    expect(call?.approval).toMatchObject({ status: 'approved', decidedBy: KEYS.user.userId, comment: 'ok' });
    // The same decision again is refused: it was decided once.
    const again = decision(taskId, parked.contextId, { approvalId: approval?.approvalId, decision: 'approve' });
    expect(await codeOf(client.sendMessage(send(again)))).toBe(-32000);
  });

  it('refuses an answer from a caller who may not decide it (the approval waits); an approver’s answer moves the task', async () => {
    const owner = await clientFor(KEYS.user.key);
    let task = asTask(await owner.sendMessage(send(text('Make good on late order 2024001'))));
    // create_ticket and submit_refund are the owner's to approve; send_email needs an approver.
    for (let i = 0; i < 3 && approvalsOf(task)[0]?.toolName !== 'send_email'; i++) {
      const [next] = approvalsOf(task);
      task = asTask(
        await owner.sendMessage(send(decision(task.id, task.contextId, { approvalId: next?.approvalId, decision: 'approve' }))),
      );
    }
    expect(task.status.state).toBe('input-required');
    const [email] = approvalsOf(task);
    expect(email?.toolName).toBe('send_email');
    const answer = () => decision(task.id, task.contextId, { approvalId: email?.approvalId, decision: 'approve' });
    const refused = await owner.sendMessage(send(answer())).then(
      () => null,
      (e: { errorResponse?: { error: unknown } }) => e.errorResponse?.error,
    );
    expect(refused).toMatchObject({ code: -32000, data: { code: 'forbidden' } });
    expect(
      (
        await fleet()
          .client()
          .approvals.get(email?.approvalId as string)
      ).status,
    ).toBe('pending');

    const approver = await clientFor(KEYS.approver.key);
    expect(asTask(await approver.sendMessage(send(answer()))).status.state).toBe('completed');
    const trace = await fleet().client().runs.trace(task.id);
    const call = trace.steps.flatMap((s) => s.toolCalls).find((c) => c.name === 'send_email');
    expect(call?.approval).toMatchObject({ status: 'approved', decidedBy: KEYS.approver.userId });
  });

  it('returns at once when not blocking, resubscribes, and cancels (once)', async () => {
    const client = await clientFor(KEYS.user.key);
    const started = asTask(await client.sendMessage(send(text(LATE_ORDER), false)));
    expect(['submitted', 'working', 'input-required']).toContain(started.status.state);
    const followed = await collect(client.resubscribeTask({ id: started.id }));
    expect(states(followed).at(-1)).toBe('input-required');
    expect((await client.cancelTask({ id: started.id })).status.state).toBe('canceled');
    expect((await fleet().client().runs.get(started.id)).status).toBe('cancelled');
    expect(await codeOf(client.cancelTask({ id: started.id }))).toBe(-32002);
    expect(await codeOf(collect(client.resubscribeTask({ id: started.id })))).toBe(-32004);
  });

  it('sets, reads, lists and deletes push configs in v0.3 shapes, over the same store as 1.0', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage(send(text('Where is order A12345?'))));
    const url = `${receiver.url}/v03`;
    const set = await client.setTaskPushNotificationConfig({
      taskId: task.id,
      pushNotificationConfig: { id: 'hook', url, token: 'tok', authentication: { schemes: ['Bearer'], credentials: 'secret' } },
    });
    // Its notifications are v0.3's (the SDK's v0.3 serializer): the bare task, told its state at once.
    await expect.poll(() => receiver.got.filter((d) => d.path === '/v03').length, { timeout: 30_000 }).toBeGreaterThan(0);
    const [pushed] = receiver.got.filter((d) => d.path === '/v03');
    expect(pushed?.contentType).toBe('application/json');
    expect(JSON.parse(pushed?.body ?? '')).toMatchObject({ kind: 'task', id: task.id, status: { state: 'completed' } });
    // The credentials stay with Rein; the scheme is shown back.
    expect(set).toEqual({
      taskId: task.id,
      pushNotificationConfig: { id: 'hook', url, token: 'tok', authentication: { schemes: ['Bearer'] } },
    });
    expect(await client.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'hook' } as never)).toEqual(set);
    // v0.3 may ask for "the task's config" without naming it: the caller's only one.
    expect(await client.getTaskPushNotificationConfig({ id: task.id })).toEqual(set);
    expect(await client.listTaskPushNotificationConfig({ id: task.id })).toEqual([set]);
    // The same store as 1.0: a 1.0 call lists it.
    const listed = await fetch(base(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.user.key}`, 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTaskPushNotificationConfigs', params: { taskId: task.id } }),
    });
    expect(((await listed.json()) as { result: { configs: unknown[] } }).result.configs).toMatchObject([{ id: 'hook', url }]);
    // Nobody else reads or deletes it.
    const neighbour = await clientFor(NEIGHBOUR.key);
    expect(await codeOf(neighbour.listTaskPushNotificationConfig({ id: task.id }))).toBe(-32001);
    expect(await codeOf(neighbour.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'hook' }))).toBe(-32001);
    await client.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'hook' });
    expect(await client.listTaskPushNotificationConfig({ id: task.id })).toEqual([]);
    expect(await codeOf(client.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'hook' } as never))).toBe(-32001);
  });

  it('refuses malformed, oversized and keyless v0.3 calls as 1.0 does', async () => {
    const rpc = async (method: string, params: unknown, key = KEYS.user.key) => {
      const res = await fetch(base(), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
      });
      // A streaming method answers events even when it refuses (as v0.3 servers did): its one event is the error.
      const text = await res.text();
      const json = res.headers.get('content-type')?.startsWith('text/event-stream') ? text.replace(/^data: /, '') : text;
      return { status: res.status, body: JSON.parse(json) as { id?: unknown; error?: { code: unknown } } };
    };
    expect((await rpc('tasks/get', { id: 'x' }, '')).status).toBe(401);
    for (const [method, params] of [
      ['message/send', {}],
      ['message/send', { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'image' }] } }],
      ['message/send', { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'file', file: {} }] } }],
      ['message/stream', { message: 'hello' }],
      ['message/stream', { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'file' }] } }],
      ['tasks/get', {}],
      ['tasks/get', { id: '../x' }],
      ['tasks/pushNotificationConfig/set', { taskId: 'x' }],
      ['tasks/pushNotificationConfig/delete', { id: 'x' }],
      ['message/send', { message: { kind: 'message', messageId: 'm3', role: 'user', parts: [{ kind: 'text', text: 'x'.repeat(9000) }] } }],
      [
        'message/send',
        {
          message: {
            kind: 'message',
            messageId: 'm4',
            role: 'user',
            parts: Array.from({ length: 65 }, () => ({ kind: 'text', text: 'x' })),
          },
        },
      ],
    ] as const) {
      const { body } = await rpc(method, params);
      expect({ method, params, error: body.error?.code, id: body.id }).toMatchObject({ method, params, error: -32602, id: 7 });
    }
    // A file part is a well-formed message Rein's agents do not take.
    const file = await rpc('message/send', {
      message: { kind: 'message', messageId: 'm5', role: 'user', parts: [{ kind: 'file', file: { uri: 'https://a.example/x.pdf' } }] },
    });
    expect(file.body.error).toMatchObject({ code: -32602, data: { code: 'unsupported_part' } });
    expect((await rpc('agent/getAuthenticatedExtendedCard', {})).body.error?.code).toBe(-32007);
  });
});
