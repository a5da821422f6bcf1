import { runKeys } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

let redis: TestRedis;
let client: Redis;
let fleet: Fleet | undefined;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
});
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  await client.flushdb();
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

type Event = { type: string; step?: number; data: Record<string, unknown> };

/** Follows a run's SSE stream from its start until `run.finished`. */
async function follow(f: Fleet, runId: string): Promise<Event[]> {
  const res = await fetch(`${f.api}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${KEYS.user.key}` } });
  expect(res.status).toBe(200);
  const events: Event[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const data = /^data: (.*)$/m.exec(buffer.slice(0, end))?.[1];
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      if (!data) continue;
      const event = JSON.parse(data) as Event;
      events.push(event);
      if (event.type === 'run.finished') return events;
    }
  }
  return events;
}

const submit = async (f: Fleet, input: string) => {
  const submitted = await f.callApi('POST', '/v1/runs', KEYS.user.key, { input });
  expect(submitted.status).toBe(202);
  return submitted.body.id as string;
};

describe('streamed tokens', () => {
  it('publishes model.delta events on the SSE stream before the answer, and keeps them out of the trace and the journal', async () => {
    fleet = await startFleet({ redisUrl: redis.url, workers: 1 });
    const id = await submit(fleet, 'Do you support 7-day no-reason returns?');
    const events = await follow(fleet, id);
    const run = await fleet.waitForRun(id, (r) => r.status === 'succeeded');

    const last = run.step - 1;
    const answered = events.findIndex((e) => e.type === 'step.finished' && e.step === last);
    const deltas = events.filter((e) => e.type === 'model.delta');
    const lastDeltas = deltas.filter((e) => e.step === last);
    expect(lastDeltas.length).toBeGreaterThan(0);
    // Every delta of the answering step came before the step ended, and together they are the answer.
    expect(events.findLastIndex((e) => e.type === 'model.delta')).toBeLessThan(answered);
    expect(lastDeltas.map((e) => e.data.text ?? '').join('')).toBe(run.finalAnswer);
    // Tool-call pieces stream too (the first step searches the policies).
    const calls = deltas.filter((e) => e.step === 0).flatMap((e) => (e.data.toolCalls ?? []) as Array<{ name?: string }>);
    expect(calls.some((c) => c.name === 'search_policy')).toBe(true);
    // Batched: far fewer events than the model's chunks (6 characters each).
    expect(lastDeltas.length).toBeLessThan(Math.ceil((run.finalAnswer as string).length / 6));

    const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body as { steps: unknown[] };
    expect(JSON.stringify(trace)).not.toContain('model.delta');
    expect(trace.steps).toHaveLength(run.step as number);
    // The journal holds each step's assembled reply once.
    const decisions = await client.hgetall(runKeys(id).decisions);
    expect(Object.keys(decisions).sort()).toEqual(trace.steps.map((_, i) => String(i)));
    expect(JSON.parse(decisions[String(last)] as string)).toMatchObject({ content: run.finalAnswer });
    // Each decision snapshot says the request streamed, so it rebuilds to the body the endpoint received.
    const { snapshots } = (await fleet.callApi('GET', `/v1/runs/${id}/snapshots`, KEYS.admin.key)).body as {
      snapshots: Array<{ request: { stream?: boolean } }>;
    };
    expect(snapshots.map((x) => x.request.stream)).toEqual(trace.steps.map(() => true));
  });

  it('leaves no partial decision when the worker is killed mid-stream; another worker decides the step whole', async () => {
    fleet = await startFleet({ redisUrl: redis.url, workers: 1, modelEnv: { SCRIPTED_MODEL_CHUNK_DELAY_MS: '40' } });
    const id = await submit(fleet, 'Do you support 7-day no-reason returns?');
    const events = runKeys(id).events;
    // Wait until the first step's reply is streaming.
    for (let i = 0; i < 400; i++) {
      const entries = await client.xrange(events, '-', '+');
      if (entries.some(([, fields]) => String(fields[1]).includes('"model.delta"'))) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    fleet.workers[0]?.kill('SIGKILL');
    expect(await client.hlen(runKeys(id).decisions)).toBe(0);

    await fleet.startWorker();
    const run = await fleet.waitForRun(id, (r) => r.status === 'succeeded', 60_000);
    const decisions = await client.hgetall(runKeys(id).decisions);
    expect(Object.keys(decisions)).toHaveLength(run.step as number);
    expect(JSON.parse(decisions['0'] as string).toolCalls).toEqual([expect.objectContaining({ name: 'search_policy' })]);
  });
});
