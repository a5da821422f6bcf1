import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Message, StreamResponse, type Task, type TaskPushNotificationConfig, TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aClient, textMessage } from '../support/a2a-client.js';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
/** A user of the same tenant who neither owns the runs nor oversees the tenant. */
const NEIGHBOUR = { key: 'e2e-user-key-zhaoliu', tenantId: 'e2e', userId: 'zhaoliu', roles: ['user'] };

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/** A receiver on loopback; the first delivery to `/flaky` is answered 500, so it comes again. */
function startReceiver() {
  const got: Delivery[] = [];
  let failed = false;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const fail = req.url === '/flaky' && !failed;
      failed ||= fail;
      const answered = fail ? 500 : 204;
      got.push({ path: req.url ?? '', headers: req.headers, body, answered });
      res.writeHead(answered).end();
    });
  });
  return new Promise<{ url: string; got: Delivery[]; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, close: () => server.close() }),
    ),
  );
}

/**
 * Checks a Standard Webhooks signature by the spec (HMAC-SHA256 over `id.timestamp.body`,
 * base64, `v1,` prefixed), keyed by the config's token as raw bytes: written here rather
 * than taken from the library Rein signs with.
 */
function signedWith(token: string, d: Delivery): boolean {
  const id = String(d.headers['webhook-id']);
  const at = String(d.headers['webhook-timestamp']);
  const expected = createHmac('sha256', Buffer.from(token)).update(`${id}.${at}.${d.body}`).digest();
  return String(d.headers['webhook-signature'])
    .split(' ')
    .some((s) => {
      const given = Buffer.from(s.replace(/^v1,/, ''), 'base64');
      return s.startsWith('v1,') && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

const taskOf = (d: Delivery): Task => {
  const payload = StreamResponse.fromJSON(JSON.parse(d.body)).payload;
  if (payload?.$case !== 'task') throw new Error(`expected a task, got ${payload?.$case}`);
  return payload.value;
};

/**
 * Rein's A2A push notifications driven by the official SDK's client: configs set, read,
 * listed and deleted over JSON-RPC, deliveries received by a local HTTP receiver (the fleet
 * allows private addresses, as the webhook tests do for theirs).
 */
describe('A2A push notifications with the @a2a-js/sdk client', () => {
  const fleet = fleetPerFile({
    env: {
      REIN_API_KEYS: JSON.stringify([...Object.values(KEYS), NEIGHBOUR]),
      REIN_WEBHOOK_ALLOW_PRIVATE: 'true',
      REIN_WEBHOOK_RETRY_BASE_MS: '300',
    },
  });
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver?.close());

  const clientFor = (key: string) => a2aClient(`${fleet().api}/a2a/order-assistant/`, key);

  const text = textMessage;
  const send = (message: Message, push?: TaskPushNotificationConfig) => ({
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: push, returnImmediately: true },
    metadata: undefined,
  });
  const config = (taskId: string, path: string, extra: Partial<TaskPushNotificationConfig> = {}): TaskPushNotificationConfig => ({
    tenant: '',
    id: '',
    taskId,
    url: `${receiver.url}${path}`,
    token: '',
    authentication: undefined,
    ...extra,
  });
  const asTask = (result: Task | Message): Task => {
    if (!('status' in result)) throw new Error('expected a task, got a message');
    return result;
  };
  /** The deliveries `path` accepted so far, one per `webhook-id` (a retry repeats its id). */
  const at = (path: string) => [
    ...new Map(receiver.got.filter((d) => d.path === path && d.answered === 204).map((d) => [d.headers['webhook-id'], d])).values(),
  ];
  /** The states pushed to `path`, in the order the task entered them (a retried delivery arrives late). */
  const statesAt = (path: string) =>
    at(path)
      .map((d) => taskOf(d).status)
      .sort((a, b) => String(a?.timestamp).localeCompare(String(b?.timestamp)))
      .map((s) => s?.state);
  async function until(what: string, probe: () => boolean): Promise<void> {
    const end = Date.now() + 45_000;
    while (Date.now() < end) {
      if (probe()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${what} never happened: ${JSON.stringify(receiver.got.map((d) => [d.path, taskOf(d).status?.state]))}`);
  }

  it('says so in the card', async () => {
    const card = await (await clientFor(KEYS.user.key)).getAgentCard();
    expect(card.capabilities?.pushNotifications).toBe(true);
  });

  it('pushes input-required, then working and completed, signed and with the token and credentials given', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage(send(text(LATE_ORDER))));
    const token = `tok-${randomUUID()}`;
    const set = await client.createTaskPushNotificationConfig(
      config(task.id, '/flaky', { id: 'mine', token, authentication: { scheme: 'Bearer', credentials: 'receiver-secret' } }),
    );
    // The credentials stay with Rein; the rest reads back as given.
    expect(set).toMatchObject({ id: 'mine', taskId: task.id, url: `${receiver.url}/flaky`, token, authentication: { scheme: 'Bearer' } });
    expect(set.authentication?.credentials).toBe('');
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' })).toEqual(set);

    await until('input-required pushed', () => statesAt('/flaky').includes(TaskState.TASK_STATE_INPUT_REQUIRED));
    const parked = at('/flaky').find((d) => taskOf(d).status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) as Delivery;
    expect(parked.headers).toMatchObject({
      'content-type': 'application/a2a+json',
      'x-a2a-notification-token': token,
      authorization: 'Bearer receiver-secret',
      'webhook-id': expect.stringMatching(/^msg_/),
    });
    expect(signedWith(token, parked)).toBe(true);
    expect(signedWith('another-token', parked)).toBe(false);
    // The task as GetTask shows it: the approval to decide is in its status message.
    const approvals = taskOf(parked).status?.message?.parts.find((p) => p.content?.$case === 'data')?.content;
    const approvalId =
      approvals?.$case === 'data' ? (approvals.value as { approvals: Array<{ approvalId: string }> }).approvals[0]?.approvalId : undefined;
    expect(approvalId).toEqual(expect.any(String));

    await client.sendMessage({
      ...send({
        ...text(''),
        taskId: task.id,
        contextId: task.contextId,
        parts: [
          { content: { $case: 'data', value: { approvalId, decision: 'approve' } }, metadata: undefined, filename: '', mediaType: '' },
        ],
      }),
    });
    await until('completed pushed', () => statesAt('/flaky').includes(TaskState.TASK_STATE_COMPLETED));
    const states = statesAt('/flaky');
    // Each change once, in order: no state twice in a row, input-required then working then completed.
    expect(states.filter((s, i) => s === states[i - 1])).toEqual([]);
    expect(states.slice(-3)).toEqual([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    const done = at('/flaky').find((d) => taskOf(d).status?.state === TaskState.TASK_STATE_COMPLETED) as Delivery;
    expect(taskOf(done).artifacts[0]?.parts[0]?.content).toMatchObject({ $case: 'text' });
    for (const d of at('/flaky')) expect(signedWith(token, d)).toBe(true);
    // The refused first delivery came again, the same notification under the same webhook-id.
    const refused = receiver.got.find((d) => d.path === '/flaky' && d.answered === 500) as Delivery;
    const again = () => at('/flaky').find((d) => d.headers['webhook-id'] === refused.headers['webhook-id']);
    await until('the refused delivery retried', () => again() !== undefined);
    expect(again()?.body).toBe(refused.body);
  });

  it('takes a config inline in SendMessage, names it by its URL, and gives it a token when none is set', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage(send(text(LATE_ORDER), config('', '/inline'))));
    const { configs } = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    expect(configs).toHaveLength(1);
    const [inline] = configs as [TaskPushNotificationConfig];
    expect(inline).toMatchObject({ id: expect.stringMatching(/^pc_/), taskId: task.id, token: expect.stringMatching(/^\S{16,}$/) });
    // The same config again (a retry) is the same config, not a second one.
    await client.createTaskPushNotificationConfig(config(task.id, '/inline'));
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toHaveLength(
      1,
    );
    await until('input-required pushed inline', () => statesAt('/inline').includes(TaskState.TASK_STATE_INPUT_REQUIRED));
    for (const d of at('/inline')) {
      expect(d.headers['x-a2a-notification-token']).toBe(inline.token);
      expect(signedWith(inline.token, d)).toBe(true);
    }
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    await until('canceled pushed', () => statesAt('/inline').includes(TaskState.TASK_STATE_CANCELED));
  });

  it('tells a replaced config (a new URL or token) the state at once, though the one it replaces was told it', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage(send(text(LATE_ORDER))));
    await client.createTaskPushNotificationConfig(config(task.id, '/before', { id: 'moving', token: 'first-token' }));
    await until('input-required pushed before', () => statesAt('/before').includes(TaskState.TASK_STATE_INPUT_REQUIRED));
    await client.createTaskPushNotificationConfig(config(task.id, '/after', { id: 'moving', token: 'second-token' }));
    await until('input-required pushed after', () => statesAt('/after').includes(TaskState.TASK_STATE_INPUT_REQUIRED));
    for (const d of at('/after')) expect(signedWith('second-token', d)).toBe(true);
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  });

  it('keeps no inline config of a message that answers its task wrongly', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage({ ...send(text(LATE_ORDER)), configuration: undefined }));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const wrong = { ...text('approve it'), taskId: task.id, contextId: task.contextId };
    await expect(client.sendMessage(send(wrong, config(task.id, '/wrong')))).rejects.toMatchObject({ envelopeCode: -32602 });
    const { configs } = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    expect(configs).toEqual([]);
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  });

  it('keeps configs to their caller: another tenant or user is told the task does not exist; an approver sees only its own', async () => {
    const owner = await clientFor(KEYS.user.key);
    const task = asTask(await owner.sendMessage(send(text(LATE_ORDER))));
    await owner.createTaskPushNotificationConfig(config(task.id, '/owner', { id: 'owned', token: 'owner-token' }));
    for (const key of [KEYS.other.key, NEIGHBOUR.key]) {
      const outsider = await clientFor(key);
      const refused = { envelopeCode: -32001 };
      await expect(outsider.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'owned' })).rejects.toMatchObject(refused);
      await expect(
        outsider.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }),
      ).rejects.toMatchObject(refused);
      await expect(outsider.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'owned' })).rejects.toMatchObject(refused);
      await expect(outsider.createTaskPushNotificationConfig(config(task.id, '/outsider'))).rejects.toMatchObject(refused);
    }
    // An approver reads the task, may set a config of its own, and neither sees nor deletes the owner's.
    const approver = await clientFor(KEYS.approver.key);
    expect((await approver.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual(
      [],
    );
    await expect(approver.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'owned' })).rejects.toMatchObject({
      envelopeCode: -32001,
    });
    await approver.createTaskPushNotificationConfig(config(task.id, '/approver', { id: 'owned', token: 'approver-token' }));
    expect(await owner.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'owned' })).toMatchObject({
      url: `${receiver.url}/owner`,
      token: 'owner-token',
    });

    // A deleted config is told nothing more: the task's end reaches the approver's only.
    await until('input-required pushed to the owner', () => statesAt('/owner').includes(TaskState.TASK_STATE_INPUT_REQUIRED));
    await owner.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'owned' });
    await expect(owner.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'owned' })).rejects.toMatchObject({
      envelopeCode: -32001,
    });
    await owner.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    await until('canceled pushed to the approver', () => statesAt('/approver').includes(TaskState.TASK_STATE_CANCELED));
    expect(statesAt('/owner')).not.toContain(TaskState.TASK_STATE_CANCELED);
    for (const d of at('/approver')) expect(d.headers['x-a2a-notification-token']).toBe('approver-token');
  });

  it('refuses malformed and oversized configs, and more than ten on a task', async () => {
    const client = await clientFor(KEYS.user.key);
    const task = asTask(await client.sendMessage(send(text(LATE_ORDER))));
    const invalid = { envelopeCode: -32602 };
    for (const bad of [
      config(task.id, `/${'x'.repeat(2000)}`),
      { ...config(task.id, '/x'), url: 'ftp://example.com/hook' },
      { ...config(task.id, '/x'), url: 'http://user:pass@example.com/hook' },
      config(task.id, '/x', { token: 'line\r\nx-injected: 1' }),
      config(task.id, '/x', { authentication: { scheme: 'Bearer', credentials: 'a\r\nb' } }),
      config(task.id, '/x', { authentication: { scheme: 'Bear er', credentials: 'x' } }),
      config(task.id, '/x', { id: 'has space' }),
      config('../etc', '/x'),
    ])
      await expect(client.createTaskPushNotificationConfig(bad)).rejects.toMatchObject(invalid);
    await expect(client.createTaskPushNotificationConfig(config('no-such-task', '/x'))).rejects.toMatchObject({ envelopeCode: -32001 });
    for (let i = 0; i < 10; i++) await client.createTaskPushNotificationConfig(config(task.id, `/many/${i}`));
    await expect(client.createTaskPushNotificationConfig(config(task.id, '/many/10'))).rejects.toMatchObject({
      envelopeCode: -32000,
      data: { code: 'too_many_push_configs' },
    });
    // Replacing one it holds is still allowed.
    await client.createTaskPushNotificationConfig(config(task.id, '/many/0', { token: 'replaced-token' }));
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });

    // An inline config naming a task (another one) with a new message starts nothing.
    await expect(client.sendMessage(send(text(LATE_ORDER), config(task.id, '/inline-elsewhere')))).rejects.toMatchObject(invalid);
    // Shapes the SDK would not send: JSON-RPC straight.
    const rpc = async (method: string, params: unknown) => {
      const res = await fetch(`${fleet().api}/a2a/order-assistant`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.user.key}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return ((await res.json()) as { error?: { code: number } }).error?.code;
    };
    const url = `${receiver.url}/raw`;
    // v0.3's name is the same door: the task's ten configs are its cap too (too_many_push_configs).
    expect(await rpc('tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url } })).toBe(-32000);
    expect(await rpc('CreateTaskPushNotificationConfig', { taskId: task.id, url, authentication: { scheme: 'Bearer' } })).toBe(-32602);
    expect(await rpc('CreateTaskPushNotificationConfig', { taskId: task.id, url: { href: url } })).toBe(-32602);
    expect(await rpc('CreateTaskPushNotificationConfig', { taskId: task.id, url, token: 'x'.repeat(513) })).toBe(-32602);
    expect(await rpc('ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: -1 })).toBe(-32602);
    expect(await rpc('GetTaskPushNotificationConfig', { taskId: task.id })).toBe(-32602);
  });
});
