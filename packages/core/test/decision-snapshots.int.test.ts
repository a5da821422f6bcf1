import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Snapshot } from '@rein/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { chatCompletionBody, createOpenAICompletion, type ModelGateway } from '../src/adapters/model/model-gateway.js';
import { runKeys } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { harnessPerTest } from './harness.js';

const use = harnessPerTest();

/** An OpenAI-compatible endpoint that keeps every request body exactly as it arrived. */
async function recordingEndpoint(reply: (call: number) => object): Promise<{ url: string; bodies: string[]; server: Server }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply(bodies.length - 1)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, bodies, server };
}

const completion = (message: object) => ({
  id: 'cmpl',
  object: 'chat.completion',
  model: 'fake-model',
  choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', ...message } }],
  usage: { prompt_tokens: 50, completion_tokens: 5 },
});
const calling = (id: string, name: string, args: object) => ({
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
});

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

describe('decision snapshots', () => {
  it('rebuild, byte for byte, the request body the model endpoint received at every step', async () => {
    const script = [
      completion(calling('c1', 'query_order', { orderNo: '2024001' })),
      completion(calling('c2', 'search_policy', { query: '超时发货 赔偿' })),
      completion({ content: '订单超期 14 天，可补偿 5%。' }),
    ];
    const endpoint = await recordingEndpoint((call) => script[call] as object);
    server = endpoint.server;
    const complete = createOpenAICompletion({ baseURL: endpoint.url, apiKey: 'test' });
    // A whole (not streamed) reply: this endpoint answers JSON, and the rebuilt body is the non-streaming one.
    const model: ModelGateway = { complete: ({ onDelta: _live, ...request }) => complete('fake-model', request) };
    const t = use(model);
    const id = await t.submit('订单 2024001 还没发货，怎么办？');
    await t.drain();
    expect(await t.store.require(id)).toMatchObject({ status: 'succeeded', step: 3 });

    const snapshots = await t.journal.snapshots(id);
    expect(snapshots.map((s) => s.step)).toEqual([0, 1, 2]);
    expect(endpoint.bodies).toHaveLength(3);
    snapshots.forEach((s, i) => {
      const rebuilt = chatCompletionBody(s.request.model, {
        messages: s.request.messages as never,
        tools: (s.request.toolSpecs ?? []) as never,
        maxTokens: s.request.maxTokens,
        stream: s.request.stream,
      });
      expect(JSON.stringify(rebuilt)).toBe(endpoint.bodies[i]);
      expect(s.reply).toEqual(script[i]);
    });
  });

  it("store a step's history as a range of the run's log, so no snapshot repeats an earlier message", async () => {
    const input = 'order 2024001 has not shipped';
    const t = use(
      createFakeModel([
        { toolCalls: [toolCall('c1', 'query_order', { orderNo: '2024001' })] },
        { toolCalls: [toolCall('c2', 'search_policy', { query: 'late shipment' })] },
        { content: 'done' },
      ]),
    );
    const id = await t.submit(input);
    await t.drain();
    const snapshots = await t.journal.snapshots(id);
    const first = (snapshots[0] as Snapshot).request;
    const system = String((first.messages[0] as { content: unknown }).content);
    const description = String((first.toolSpecs as Array<{ function: { description: string } }>)[0]?.function.description);
    const stored = await t.redis.hvals(runKeys(id).snapshots);
    expect(stored).toHaveLength(3);
    for (const record of stored) {
      expect(record).not.toContain(input); // the user's message lives in the log only
      expect(record).not.toContain(system); // the system prompt and tool list are content-addressed
      expect(record).not.toContain(description);
    }
    expect(Object.keys(await t.redis.hgetall(runKeys(id).blobs))).toHaveLength(3); // system prompt, tool names, tool specs: once per run
    // …and sent once per run: the run names what is stored, so later steps do not send the texts again.
    expect((await t.store.require(id)).snapshotBlobs?.sort()).toEqual(Object.keys(await t.redis.hgetall(runKeys(id).blobs)).sort());
    const second = snapshots[1];
    expect(second?.request.messages).toHaveLength(4); // system, user, assistant call, tool result
    expect(second?.request.tools).toContain('query_order');
  });

  it("send the system prompt and tool list to Redis at the run's first step only", async () => {
    const hsetnxCalls = async (redis: { info(section: string): Promise<string> }) =>
      Number(/cmdstat_hsetnx:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    const t = use(
      createFakeModel([
        { toolCalls: [toolCall('c1', 'search_policy', { query: 'returns' })] },
        { toolCalls: [toolCall('c2', 'search_policy', { query: 'late shipment' })] },
        { content: 'done' },
      ]),
    );
    const id = await t.submit('what are the rules?');
    const before = await hsetnxCalls(t.redis);
    await t.drain();
    // Three decisions journaled (one HSETNX each) and three texts stored once: not three per step.
    expect((await hsetnxCalls(t.redis)) - before).toBe(3 + 3);
    expect(await t.journal.snapshots(id)).toHaveLength(3);
  });

  it('keep messages the log does not hold as they were sent', async () => {
    const t = use(createFakeModel([{ content: 'answer' }]));
    const id = await t.submit('hello');
    await t.drain();
    const [logged] = await t.store.messages(id);
    const messages = [{ role: 'system', content: 'be brief' }, logged, { role: 'user', content: 'a reminder the log never saw', extra: 1 }];
    await t.journal.snapshot(id, {
      schemaVersion: 1,
      step: 7,
      at: new Date().toISOString(),
      request: { model: 'm', messages, tools: ['query_order'], maxTokens: 10, timeoutMs: 1000 },
      reply: { content: 'ok' },
    });
    const snapshot = (await t.journal.snapshots(id)).find((s) => s.step === 7);
    expect(JSON.stringify(snapshot?.request.messages)).toBe(JSON.stringify(messages));
    expect(snapshot?.request).not.toHaveProperty('toolSpecs');
  });

  it('store a prompt whose older turns were summarised as log head, summary and log tail, and rebuild it exactly', async () => {
    const t = use(
      createFakeModel([
        { toolCalls: [toolCall('c1', 'query_order', { orderNo: '2024001' })] },
        { toolCalls: [toolCall('c2', 'search_policy', { query: 'late shipment' })] },
        { content: 'done' },
      ]),
    );
    const id = await t.submit('order 2024001 has not shipped');
    await t.drain();
    const log = await t.store.messages(id);
    // What a context policy sends: the user turn, a summary of the first call, the latest turn.
    const summary = { role: 'system', content: 'Earlier: query_order(2024001) → not shipped, 14 days late.' };
    const messages = [{ role: 'system', content: 'be brief' }, log[0], summary, ...log.slice(3)];
    await t.journal.snapshot(id, {
      schemaVersion: 1,
      step: 9,
      at: new Date().toISOString(),
      request: { model: 'm', messages, tools: ['query_order'], maxTokens: 10, timeoutMs: 1000 },
      reply: { content: 'ok' },
    });
    const stored = JSON.parse((await t.redis.hget(runKeys(id).snapshots, '9')) as string);
    expect(stored).toMatchObject({ log: [0, 1], extra: [summary], tail: [3, log.length] });
    const snapshot = (await t.journal.snapshots(id)).find((x) => x.step === 9);
    expect(JSON.stringify(snapshot?.request.messages)).toBe(JSON.stringify(messages));
  });

  it('go out with their decision: a second attempt keeps the first decision, and its own snapshot', async () => {
    const t = use(createFakeModel([{ content: 'answer' }]));
    const id = await t.submit('hello');
    const decision = (content: string) => ({
      schemaVersion: 1 as const,
      step: 5,
      model: 'm',
      content,
      toolCalls: [],
      usage: { promptTokens: 3, completionTokens: 1 },
      durationMs: 1,
      createdAt: new Date().toISOString(),
    });
    const snapshot = (content: string): Snapshot => ({
      schemaVersion: 1,
      step: 5,
      at: new Date().toISOString(),
      request: { model: 'm', messages: [{ role: 'system', content: 'be brief' }], tools: [], maxTokens: 10, timeoutMs: 1000 },
      reply: { content },
    });
    const first = await t.journal.recordWithSnapshot(id, decision('first'), snapshot('first'));
    const second = await t.journal.recordWithSnapshot(id, decision('second'), snapshot('second'));
    expect(first.decision.content).toBe('first');
    expect(second.decision.content).toBe('first'); // I3: the journaled decision wins
    expect(second.blobs).toEqual(first.blobs);
    expect((await t.journal.snapshots(id)).find((s) => s.step === 5)?.reply).toEqual({ content: 'second' });
  });

  it('still read snapshots stored whole by schema version 1', async () => {
    const t = use(createFakeModel([{ content: 'answer' }]));
    const id = await t.submit('hello');
    const legacy = {
      schemaVersion: 1,
      step: 0,
      at: new Date().toISOString(),
      request: { model: 'm', messages: [{ role: 'user', content: 'hello' }], tools: ['query_order'], maxTokens: 5, timeoutMs: 1000 },
      reply: { id: 'x' },
    };
    await t.redis.hset(runKeys(id).snapshots, '0', JSON.stringify(legacy));
    expect(await t.journal.snapshots(id)).toEqual([legacy]);
  });
});
