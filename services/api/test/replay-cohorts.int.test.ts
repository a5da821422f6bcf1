import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime, runKeys } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

/** Cohort replays as a gate: what they may spend, how many run at once, and on which version. */
const ROOT = { key: 'replay-cohorts-root-key', tenantId: 'acme', userId: 'root', roles: ['admin'] };
const OTHER = { key: 'replay-cohorts-other-key', tenantId: 'globex', userId: 'gina', roles: ['admin'] };
const BUSY = { key: 'replay-cohorts-busy-key', tenantId: 'initech', userId: 'ivan', roles: ['admin'] };

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
      REIN_API_KEYS: JSON.stringify([ROOT, OTHER, BUSY]),
      REIN_MODEL: 'rein-scripted',
      REIN_REPLAY_COHORTS_PER_TENANT: '1',
      LOG_LEVEL: 'silent',
    }),
    'replay-cohorts-test',
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
const since = new Date(Date.now() - 3_600_000).toISOString();

async function patchRun(id: string, patch: Record<string, unknown>) {
  const doc = JSON.parse((await client.hget(runKeys(id).run, 'doc')) ?? '{}');
  await client.hset(runKeys(id).run, 'doc', JSON.stringify({ ...doc, ...patch }));
}

/** `n` finished runs of `who`, each with a token limit of `maxTokens` (no worker runs here: the records are set so). */
async function finishedRuns(who: { key: string }, n: number, maxTokens: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await post(who, '/v1/runs', { input: `Order 2024001, question ${i}`, limits: { maxTokens } });
    expect(res.statusCode).toBe(202);
    await patchRun(res.json().id, { status: 'succeeded' });
    ids.push(res.json().id);
  }
  return ids;
}

/** A cohort replay as a worker finishes it: `spent` tokens, then the finish hook. */
async function finish(replayId: string, spent: number) {
  await patchRun(replayId, { status: 'succeeded', usage: { promptTokens: spent, completionTokens: 0, totalTokens: spent } });
  const run = await rt.store.get(replayId);
  if (!run) throw new Error(`no replay ${replayId}`);
  await rt.cohorts.replayFinished(run);
}

const startedOf = async (who: { key: string }, id: string) => {
  const view = (await app.inject({ method: 'GET', url: `/v1/replays/${id}`, headers: as(who) })).json();
  return view.runs.filter((r: { state: string }) => r.state === 'running').map((r: { replay: string }) => r.replay) as string[];
};

describe('a cohort replay', () => {
  it('on an app version no worker runs is refused, 409 version_not_live, as a single replay is', async () => {
    const [original] = await finishedRuns(OTHER, 1, 1000);
    const single = await post(OTHER, `/v1/runs/${original}/replay`, { version: 'v-nobody-runs' });
    expect(single.json().error?.code).toBe('version_not_live');
    const cohort = await post(OTHER, '/v1/replays', { agent: 'order-assistant', since, limit: 5, version: 'v-nobody-runs' });
    expect(cohort.statusCode).toBe(409);
    expect(cohort.json().error.code).toBe('version_not_live');
  });

  it("reserves each replay's token limit before it starts: maxTokens binds while replays run, not only between them", async () => {
    await finishedRuns(ROOT, 6, 1000);
    const res = await post(ROOT, '/v1/replays', { agent: 'order-assistant', since, limit: 6, concurrency: 12, maxTokens: 2500 });
    expect(res.statusCode).toBe(202);
    const cohort = res.json().id as string;
    // Two limits of 1,000 fit in 2,500; a third would not, whatever the concurrency allows.
    const first = await startedOf(ROOT, cohort);
    expect(first).toHaveLength(2);
    // The first spent 800 of its 1,000: 1,800 is spent or held, so another 1,000 still does not fit.
    await finish(first[0] as string, 800);
    expect(await startedOf(ROOT, cohort)).toEqual([first[1]]);
    // 1,700 spent, nothing held: no run left fits in what remains, so they are skipped.
    await finish(first[1] as string, 900);
    const view = (await app.inject({ method: 'GET', url: `/v1/replays/${cohort}`, headers: as(ROOT) })).json();
    expect(view).toMatchObject({ status: 'finished', summary: { total: 6, replayed: 2, skipped: 4 } });
    expect(view.summary.tokens.replay).toBeLessThanOrEqual(2500);
  });

  it('runs at most REIN_REPLAY_COHORTS_PER_TENANT at once per tenant: one more is 409 too_many_cohorts until one ends', async () => {
    await finishedRuns(BUSY, 2, 1000);
    const body = { agent: 'order-assistant', since, limit: 1 };
    const first = await post(BUSY, '/v1/replays', body);
    expect(first.statusCode).toBe(202);
    const second = await post(BUSY, '/v1/replays', body);
    expect(second.statusCode).toBe(409);
    expect(second.json().error.code).toBe('too_many_cohorts');
    // Another tenant's cohorts do not count.
    expect((await post(OTHER, '/v1/replays', body)).statusCode).toBe(202);
    const [replay] = await startedOf(BUSY, first.json().id);
    await finish(replay as string, 10);
    expect((await post(BUSY, '/v1/replays', body)).statusCode).toBe(202);
  });
});
