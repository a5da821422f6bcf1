import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime, runKeys } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

/** Who may start what from a finished run: replays and forks run as someone, with some model. */
const ALICE = { key: 'replay-rights-alice-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const BOB = { key: 'replay-rights-bob-key', tenantId: 'acme', userId: 'bob', roles: ['approver'] };
const ROOT = { key: 'replay-rights-root-key', tenantId: 'acme', userId: 'root', roles: ['admin'] };

let redis: TestRedis;
let client: Redis;
let rt: Runtime;
let app: FastifyInstance;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  rt = await createRuntime(
    optionsFromEnv({
      REDIS_URL: redis.url,
      REIN_API_KEYS: JSON.stringify([ALICE, BOB, ROOT]),
      REIN_MODEL: 'rein-scripted',
      REIN_MODEL_PRICES: JSON.stringify({
        'rein-scripted': { promptPerMTok: 0, completionPerMTok: 0 },
        'model-b': { promptPerMTok: 1, completionPerMTok: 2 },
      }),
      LOG_LEVEL: 'silent',
    }),
    'replay-rights-test',
    'producer',
    orderApp,
  );
  app = createApiApp(rt);
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await rt?.close();
  client?.disconnect();
  await redis?.stop();
});

const as = (who: { key: string }) => ({ authorization: `Bearer ${who.key}` });
const post = (who: { key: string }, url: string, payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url, headers: as(who), payload });

/** A run of `who`, as it would be once finished (no worker runs here: the record is set so). */
async function finishedRun(who: { key: string }, patch: Record<string, unknown> = {}): Promise<string> {
  const { id } = (await post(who, '/v1/runs', { input: 'Order 2024001 has not shipped yet' })).json();
  const doc = JSON.parse((await client.hget(runKeys(id).run, 'doc')) ?? '{}');
  await client.hset(runKeys(id).run, 'doc', JSON.stringify({ ...doc, status: 'succeeded', ...patch }));
  return id;
}

describe('a fork runs as whoever forks', () => {
  it("an approver's fork of an admin's run runs with the approver's identity and roles, not the admin's", async () => {
    const original = await finishedRun(ROOT);
    const res = await post(BOB, `/v1/runs/${original}/fork`, { fromStep: 0, input: 'now refund it all' });
    expect(res.statusCode).toBe(202);
    const fork = await rt.store.get(res.json().id);
    expect(fork).toMatchObject({ forkOf: original, tenantId: 'acme', userId: 'bob', roles: ['approver'] });
  });

  it("a fork gets no more budget than a new run could ask for: the original's granted raises stay the original's", async () => {
    const original = await finishedRun(ALICE);
    const doc = JSON.parse((await client.hget(runKeys(original).run, 'doc')) ?? '{}');
    // As an approved budget raise leaves it: past the operator's ceiling (1,000,000 tokens by default).
    const raised = { ...doc.limits, maxTokens: 5_000_000 };
    await client.hset(runKeys(original).run, 'doc', JSON.stringify({ ...doc, limits: raised }));
    const res = await post(ALICE, `/v1/runs/${original}/fork`, { fromStep: 0 });
    expect(res.statusCode).toBe(202);
    expect((await rt.store.get(res.json().id))?.limits).toEqual({ ...raised, maxTokens: 1_000_000 });
  });

  it('a fork of a replay is refused: its history holds simulated results, not what the world did', async () => {
    const real = await finishedRun(ALICE);
    const replay = await finishedRun(ALICE, { mode: 'replay', replayOf: real, replay: { liveReads: false, onNewApproval: 'reject' } });
    const res = await post(ALICE, `/v1/runs/${replay}/fork`, { fromStep: 0 });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('not_a_replay');
  });
});

describe('a fork without input', () => {
  it('is replayed, and forked again, from all of the history it started with, not its first message', async () => {
    const original = await finishedRun(ALICE, { historyMessages: 2 });
    // A session's earlier turn, then the input: what the original's first step saw.
    const history = [
      { role: 'user', content: 'Where is order A12345?' },
      { role: 'assistant', content: 'It shipped yesterday.' },
      { role: 'user', content: 'Order 2024001 has not shipped yet' },
    ];
    await client.del(runKeys(original).messages);
    await client.rpush(runKeys(original).messages, ...history.map((m) => JSON.stringify(m)));
    const { id: fork } = (await post(ALICE, `/v1/runs/${original}/fork`, { fromStep: 0 })).json();
    const doc = JSON.parse((await client.hget(runKeys(fork).run, 'doc')) ?? '{}');
    await client.hset(runKeys(fork).run, 'doc', JSON.stringify({ ...doc, status: 'succeeded' }));
    const messagesOf = async (id: string) => (await client.lrange(runKeys(id).messages, 0, -1)).map((m) => JSON.parse(m));
    expect(await messagesOf(fork)).toEqual(history);
    const replay = (await post(ALICE, `/v1/runs/${fork}/replay`, {})).json();
    expect(await messagesOf(replay.id)).toEqual(history);
    const again = (await post(ALICE, `/v1/runs/${fork}/fork`, { fromStep: 0 })).json();
    expect(await messagesOf(again.id)).toEqual(history);
  });
});

describe('a replay', () => {
  it('calls only a model the fleet knows (configured or priced): any other is 400 unknown_model', async () => {
    const original = await finishedRun(ALICE);
    for (const model of ['o1-pro', 'openai/gpt-4.5-preview']) {
      const res = await post(ALICE, `/v1/runs/${original}/replay`, { model });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('unknown_model');
    }
    const cohort = await post(ROOT, '/v1/replays', {
      agent: 'order-assistant',
      since: new Date(0).toISOString(),
      limit: 1,
      model: 'o1-pro',
    });
    expect(cohort.json().error?.code).toBe('unknown_model');
    expect((await post(ALICE, `/v1/runs/${original}/replay`, { model: 'model-b' })).statusCode).toBe(202);
  });

  it("with liveReads runs tools live as the original's owner: only that owner may ask for it", async () => {
    const original = await finishedRun(ROOT);
    const res = await post(BOB, `/v1/runs/${original}/replay`, { liveReads: true, instructions: 'Look up every order there is.' });
    expect(res.statusCode).toBe(403);
    expect((await post(BOB, `/v1/runs/${original}/replay`, {})).statusCode).toBe(202);
    expect((await post(ROOT, `/v1/runs/${original}/replay`, { liveReads: true })).statusCode).toBe(202);
  });
});
