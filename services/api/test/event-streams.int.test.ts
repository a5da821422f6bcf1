import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

// Open event streams must not cost Redis connections: a process serves all of them from
// one shared reader. A tenant's open streams, and each of its users', are capped per process.
const USER = { key: 'streams-test-user-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const BOB = { key: 'streams-test-bob-key', tenantId: 'acme', userId: 'bob', roles: ['approver'] };
const CAP = 60;
const USER_CAP = 50;

let redis: TestRedis;
let rt: Runtime;
let app: FastifyInstance;
let base: string;
beforeAll(async () => {
  redis = await startTestRedis();
  rt = await createRuntime(
    optionsFromEnv({
      REDIS_URL: redis.url,
      REIN_API_KEYS: JSON.stringify([USER, BOB]),
      LOG_LEVEL: 'silent',
      REIN_MAX_STREAMS_PER_TENANT: String(CAP),
      REIN_MAX_STREAMS_PER_USER: String(USER_CAP),
    }),
    'api-streams-test',
    'producer',
    orderApp,
  );
  app = createApiApp(rt);
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await app.close();
  await rt.close();
  await redis.stop();
});

const headers = { authorization: `Bearer ${USER.key}` };
const asBob = { authorization: `Bearer ${BOB.key}` };
const clients = async () =>
  String(await rt.redis.client('LIST'))
    .trim()
    .split('\n').length;

/** An open SSE connection that collects the event names it receives. */
async function follow(runId: string, as: Record<string, string> = headers) {
  const abort = new AbortController();
  const res = await fetch(`${base}/v1/runs/${runId}/events`, { headers: as, signal: abort.signal });
  const seen: string[] = [];
  const body = res.status === 200 ? null : await res.json();
  const done = (async () => {
    if (!res.body || body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) for (const m of decoder.decode(chunk).matchAll(/event: (\S+)/g)) seen.push(m[1] ?? '');
    } catch {
      // aborted by the test
    }
  })();
  return { status: res.status, seen, done, close: () => abort.abort(), body };
}

/** Polls `check` until it holds; it is evaluated once per try (a check may open a stream). */
async function until(check: () => boolean | Promise<boolean>) {
  let held = await check();
  for (let i = 0; i < 400 && !held; i++) {
    await new Promise((r) => setTimeout(r, 25));
    held = await check();
  }
  expect(held).toBe(true);
}

describe('event streams', () => {
  it('serves many open streams without adding Redis connections, and fans every event out to all of them', async () => {
    const runIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: `stream ${i}` } });
      runIds.push(res.json().id);
    }
    const before = await clients();
    const streams = await Promise.all(Array.from({ length: 50 }, (_, i) => follow(runIds[i % 5] ?? '')));
    await until(() => streams.every((s) => s.seen.includes('run.queued')));
    // One reader for the whole process (it may have connected just now), not one per stream.
    expect(await clients()).toBeLessThanOrEqual(before + 1);
    for (const runId of runIds) {
      await rt.store.appendEvent({ type: 'run.finished', runId, step: 0, at: new Date().toISOString(), data: { status: 'cancelled' } });
    }
    await Promise.all(streams.map((s) => s.done));
    expect(streams.every((s) => s.seen.join() === 'run.queued,run.finished')).toBe(true);
  });

  it('refuses a stream over the per-tenant cap with 429 too_many_streams, and frees the slot when one closes', async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'capped' } })).json();
    // Bob (an approver) may read Alice's run: the tenant's slots are shared by both.
    const open = await Promise.all([
      ...Array.from({ length: USER_CAP }, () => follow(id)),
      ...Array.from({ length: CAP - USER_CAP }, () => follow(id, asBob)),
    ]);
    expect(open.every((s) => s.status === 200)).toBe(true);
    const refused = await follow(id, asBob);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: { code: 'too_many_streams', message: expect.stringContaining(`${CAP} event streams may be open per tenant`) },
    });
    open[CAP - 1]?.close();
    await until(async () => {
      const again = await follow(id, asBob);
      again.close();
      return again.status === 200;
    });
    for (const s of open) s.close();
  });

  it('one user cannot take the tenant’s every slot: over REIN_MAX_STREAMS_PER_USER is 429, another user still gets one', async () => {
    const { id } = (await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'user capped' } })).json();
    const open = await Promise.all(Array.from({ length: USER_CAP }, () => follow(id)));
    expect(open.every((s) => s.status === 200)).toBe(true);
    const refused = await follow(id);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: { code: 'too_many_streams', message: expect.stringContaining(`${USER_CAP} event streams may be open per user`) },
    });
    const other = await follow(id, asBob);
    expect(other.status).toBe(200);
    other.close();
    for (const s of open) s.close();
  });
});
