import { optionsFromEnv, type Principal } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApproverApp } from '../src/app.js';

// The approval feed and the uncertain writes name runs: a plain user sees those of their
// own runs only, by the rule of GET /v1/runs/:id (issue 24 item 9).
const ALICE = { key: 'feed-vis-alice-key', tenantId: 'acme', userId: 'alice', roles: ['user'] as const };
const BOB = { key: 'feed-vis-bob-key-1', tenantId: 'acme', userId: 'bob', roles: ['user'] as const };
const CAROL = { key: 'feed-vis-carol-key', tenantId: 'acme', userId: 'carol', roles: ['approver'] as const };

let redis: TestRedis;
let rt: Runtime;
let app: FastifyInstance;
let base: string;
let aliceRun: string;
let bobRun: string;

const principal = (k: typeof ALICE | typeof BOB): Principal => ({ tenantId: k.tenantId, userId: k.userId, roles: [...k.roles] });
const at = () => new Date().toISOString();

beforeAll(async () => {
  redis = await startTestRedis();
  rt = await createRuntime(
    optionsFromEnv({ REDIS_URL: redis.url, REIN_API_KEYS: JSON.stringify([ALICE, BOB, CAROL]), LOG_LEVEL: 'silent' }),
    'approver-feed-test',
    'producer',
    orderApp,
  );
  app = createApproverApp(rt);
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  aliceRun = (await rt.runs.submit(principal(ALICE), { input: 'alice asks' })).run.id;
  bobRun = (await rt.runs.submit(principal(BOB), { input: 'bob asks' })).run.id;
  // Bob's first: a reader that has Alice's has been offered Bob's.
  for (const runId of [bobRun, aliceRun]) {
    await rt.feed.publish('acme', { type: 'approval.requested', approvalId: `${runId}.1.0`, runId, status: 'pending', at: at() });
    await rt.feed.publish('acme', { type: 'effect.uncertain', runId, step: 1, toolCallId: 'c1', tool: 'refund', at: at() });
  }
});
afterAll(async () => {
  await app.close();
  await rt.close();
  await redis.stop();
});

/** The feed's text as `who` receives it, up to the entry that names `last`. */
async function feedUntil(who: { key: string }, last: string): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(`${base}/v1/approvals/events`, { headers: { authorization: `Bearer ${who.key}` }, signal: abort.signal });
  expect(res.status).toBe(200);
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body ?? []) {
    text += decoder.decode(chunk);
    if (text.includes(`"type":"effect.uncertain","runId":"${last}"`)) break;
  }
  abort.abort();
  return text;
}

const uncertain = async (who: { key: string }) =>
  (await app.inject({ method: 'GET', url: '/v1/effects/uncertain', headers: { authorization: `Bearer ${who.key}` } })).json()
    .effects as Array<{ runId: string }>;

describe('what plain users see of the tenant’s feed', () => {
  it('GET /v1/approvals/events: a user receives their own runs’ events, not another user’s', async () => {
    const text = await feedUntil(ALICE, aliceRun);
    expect(text).toContain(`"approvalId":"${aliceRun}.1.0"`);
    expect(text).not.toContain(bobRun);
  });

  it('an approver receives every run’s events', async () => {
    const text = await feedUntil(CAROL, aliceRun);
    expect(text).toContain(bobRun);
    expect(text).toContain(aliceRun);
  });

  it('GET /v1/effects/uncertain: a user lists their own runs’ uncertain writes; an approver all', async () => {
    expect((await uncertain(ALICE)).map((e) => e.runId)).toEqual([aliceRun]);
    expect((await uncertain(BOB)).map((e) => e.runId)).toEqual([bobRun]);
    expect((await uncertain(CAROL)).map((e) => e.runId)).toEqual([aliceRun, bobRun]);
  });
});
