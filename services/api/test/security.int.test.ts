import { Writable } from 'node:stream';
import { optionsFromEnv } from '@rein/core';
import { createServiceApp } from '@rein/core/http';
import { createLogger, createRuntime, type Runtime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiApp } from '../src/app.js';

const ALICE = { key: 'sec-test-alice-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const BOB = { key: 'sec-test-bob-key-1', tenantId: 'acme', userId: 'bob', roles: ['user'] };
const OPERATOR = { key: 'sec-test-operator-key', tenantId: 'acme', userId: 'root', roles: ['operator'] };

let redis: TestRedis;
let rt: Runtime;
let app: FastifyInstance;
const logLines: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  redis = await startTestRedis();
  const base = await createRuntime(
    optionsFromEnv({ REDIS_URL: redis.url, REIN_API_KEYS: JSON.stringify([ALICE, BOB, OPERATOR]), LOG_LEVEL: 'info' }),
    'api-sec-test',
    'producer',
    orderApp,
  );
  // Capture what the service logs, as JSON lines.
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  rt = { ...base, logger: createLogger('info', 'api-sec-test', base.masker, sink) };
  app = createApiApp(rt);
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await rt.close();
  await redis.stop();
});

const as = (who: { key: string }, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${who.key}`, ...extra });
const isEnvelope = (body: string) => {
  const json = JSON.parse(body);
  return typeof json?.error?.code === 'string' && typeof json.error.message === 'string' && Object.keys(json).length === 1;
};

describe('authentication is on the route, not on the raw URL (issue 9 item 1)', () => {
  const encodings = ['/%76%31/me', '/v%31/me', '/%76%31/runs', '/v1%2fme', '/%2576%2531/me', '/%76%31/runs/x/cancel', '/v1/%6de'];

  it.each(encodings)('%s without a key is 401 or 404, never 2xx or 5xx', async (url) => {
    for (const method of ['GET', 'POST'] as const) {
      const res = await app.inject({ method, url, ...(method === 'POST' ? { payload: { input: 'hi' } } : {}) });
      expect([401, 404], `${method} ${url} → ${res.statusCode} ${res.body}`).toContain(res.statusCode);
      expect(isEnvelope(res.body)).toBe(true);
    }
  });

  it('a percent-encoded path still reaches the route for a valid key (so the 401 above is auth, not a miss)', async () => {
    const res = await app.inject({ method: 'GET', url: '/%76%31/me', headers: as(ALICE) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ tenantId: 'acme', userId: 'alice' });
  });

  it('refuses to register a /v1 route outside the authenticated scope', async () => {
    const loose = createServiceApp(rt, () => {});
    expect(() => loose.get('/v1/sneaky', async () => 'no principal here')).toThrow(/authenticated scope/);
    expect(() => loose.get('/V1/sneaky', async () => 'no principal here')).toThrow(/authenticated scope/);
    await loose.close();
  });

  it('the queue board answers 401 to any encoding of its path', async () => {
    for (const url of ['/%61dmin/queues', '/admin/%71ueues', '/admin/queues/api/queues', '/%61dmin/queues/api/queues']) {
      const res = await app.inject({ method: 'GET', url });
      expect([401, 404], `${url} → ${res.statusCode}`).toContain(res.statusCode);
    }
  });
});

describe('malformed credentials are a 401 (item 2)', () => {
  const sameLengthNonAscii = `${ALICE.key.slice(0, -1)}é`;

  it('a non-ASCII bearer token of a key’s length is 401, not a crash', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${sameLengthNonAscii}` } });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
  });

  it.each(['Bearer', 'Bearer ', `Bearer ${ALICE.key} extra`, 'Basic !!!', 'Basic', `Token ${ALICE.key}`])(
    'Authorization %j is 401',
    async (authorization) => {
      const res = await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization } });
      expect(res.statusCode).toBe(401);
    },
  );

  it('on /admin/queues: non-ASCII Basic passwords, bad base64 and no colon are 401', async () => {
    const basic = (s: string) => `Basic ${Buffer.from(s, 'utf8').toString('base64')}`;
    for (const authorization of [
      basic(`ops:${OPERATOR.key.slice(0, -1)}é`),
      basic(OPERATOR.key),
      'Basic %%%%',
      `Bearer ${sameLengthNonAscii}`,
      `Basic ${Buffer.from(`ops:${OPERATOR.key.slice(0, -1)}\u00ff`, 'latin1').toString('base64')}`,
    ]) {
      const res = await app.inject({ method: 'GET', url: '/admin/queues', headers: { authorization } });
      expect(res.statusCode, authorization).toBe(401);
      expect(isEnvelope(res.body)).toBe(true);
    }
  });
});

describe('bodies nested too deep (item 3)', () => {
  const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

  it('metadata nested 5000 levels is 400 invalid_request, and its Idempotency-Key stays free', async () => {
    const headers = as(ALICE, { 'content-type': 'application/json', 'idempotency-key': 'deep-1' });
    const res = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: `{"input":"hi","metadata":${deep(5000)}}` });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('invalid_request');
    const ok = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'hi' } });
    expect(ok.statusCode).toBe(202);
  });

  it('nesting up to the bound is accepted; one level more is refused; brackets inside strings do not count', async () => {
    const metadata = (levels: number) => `{"input":"hi","metadata":{"n":${deep(levels - 2)}}}`;
    const post = (payload: string) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers: as(ALICE, { 'content-type': 'application/json' }), payload });
    expect((await post(metadata(32))).statusCode).toBe(202);
    expect((await post(metadata(33))).statusCode).toBe(400);
    expect((await post(`{"input":"${'[{'.repeat(100)}\\"${'{'.repeat(40)}"}`)).statusCode).toBe(202);
  });

  it('a failure after the key is claimed releases it: the retry creates the run', async () => {
    const headers = as(ALICE, { 'idempotency-key': 'fails-once' });
    const create = vi.spyOn(rt.store, 'create').mockRejectedValueOnce(new Error('redis hiccup'));
    const failed = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'retry me' } });
    expect(failed.statusCode).toBe(503);
    create.mockRestore();
    const retried = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'retry me' } });
    expect(retried.statusCode).toBe(202);
    const again = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'retry me' } });
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(retried.json().id);
  });
});

describe('text that is not Unicode', () => {
  const post = (url: string, payload: string) =>
    app.inject({ method: 'POST', url, headers: as(ALICE, { 'content-type': 'application/json' }), payload });

  it('a lone surrogate anywhere in a body (a value, a key, any route) is 400 invalid_request; a paired one is text', async () => {
    for (const [url, payload] of [
      ['/v1/runs', '{"input":"hi \\ud800"}'],
      ['/v1/runs', '{"input":"hi \\udc00 there"}'],
      ['/v1/runs', '{"input":"hi","metadata":{"k\\udbff":1}}'],
      ['/v1/runs', '{"input":"hi","metadata":{"deep":[["\\ude00\\ud83d"]]}}'],
      ['/v1/runs/some-run/cancel', '{"why":"\\ud800"}'],
    ] as const) {
      const res = await post(url, payload);
      expect(res.statusCode, payload).toBe(400);
      expect(res.json().error.code).toBe('invalid_request');
    }
    const ok = await post('/v1/runs', '{"input":"hi \\ud83d\\ude00 😀","metadata":{"\\ud83d\\ude00":"\\\\ud800"}}');
    expect(ok.statusCode).toBe(202);
    expect(ok.json().input).toBe('hi 😀 😀');
  });
});

describe('Idempotency-Key scope and body (item 4)', () => {
  it('is scoped per user: the same key from two users of a tenant makes two runs', async () => {
    const payload = { input: 'same words' };
    const a = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(ALICE, { 'idempotency-key': 'shared' }), payload });
    const b = await app.inject({ method: 'POST', url: '/v1/runs', headers: as(BOB, { 'idempotency-key': 'shared' }), payload });
    expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
    expect(a.json().id).not.toBe(b.json().id);
  });

  it('the same key with another body is 422 idempotency_key_reused; the same body (any key order) replays', async () => {
    const headers = as(ALICE, { 'idempotency-key': 'body-bound' });
    const first = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers,
      payload: { input: 'refund 2024001', metadata: { a: 1, b: 2 } },
    });
    expect(first.statusCode).toBe(202);
    const other = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { input: 'refund A12345' } });
    expect(other.statusCode).toBe(422);
    expect(other.json().error.code).toBe('idempotency_key_reused');
    const same = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"metadata":{"b":2,"a":1},"input":"refund 2024001"}',
    });
    expect(same.statusCode).toBe(200);
    expect(same.headers['idempotent-replayed']).toBe('true');
    expect(same.json().id).toBe(first.json().id);
  });
});

describe('a key whose first request is still creating its run', () => {
  it('answers 409 idempotency_key_in_flight until the run exists, then replays it', async () => {
    const headers = as(ALICE, { 'idempotency-key': 'in-flight' });
    const payload = { input: 'slow create' };
    let proceed: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      proceed = resolve;
    });
    const realCreate = rt.store.create.bind(rt.store);
    const create = vi.spyOn(rt.store, 'create').mockImplementationOnce(async (...args) => {
      await gate;
      return realCreate(...args);
    });
    const first = app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    await vi.waitFor(() => expect(create).toHaveBeenCalled());
    const during = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    expect(during.statusCode).toBe(409);
    expect(during.json().error.code).toBe('idempotency_key_in_flight');
    proceed();
    expect((await first).statusCode).toBe(202);
    create.mockRestore();
    const after = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload });
    expect(after.statusCode).toBe(200);
    expect(after.json().id).toBe((await first).json().id);
  });
});

describe('access logs (item 11)', () => {
  it('log method, route, status, duration, request id and tenant — never the key or the body', async () => {
    logLines.length = 0;
    await app.inject({ method: 'POST', url: '/v1/runs', headers: as(ALICE), payload: { input: 'my card 6222021234567890123' } });
    await app.inject({ method: 'GET', url: '/v1/runs/abc?x=1', headers: as(BOB) });
    await app.inject({ method: 'GET', url: '/v1/me' });
    const access = logLines.filter((l) => l.msg === 'request');
    expect(access).toHaveLength(3);
    expect(access[0]).toMatchObject({ method: 'POST', route: '/v1/runs', status: 202, tenantId: 'acme', reqId: expect.any(String) });
    expect(access[0]?.durationMs).toEqual(expect.any(Number));
    expect(access[1]).toMatchObject({ method: 'GET', route: '/v1/runs/:id', status: 404, tenantId: 'acme' });
    expect(access[2]).toMatchObject({ method: 'GET', route: '/v1/me', status: 401 });
    expect(access[2]).not.toHaveProperty('tenantId');
    const all = JSON.stringify(logLines);
    expect(all).not.toContain(ALICE.key);
    expect(all).not.toContain('6222021234567890123');
    expect(all).not.toContain('"req":{}');
  });
});

describe('every error is the envelope, with nothing internal (item 12)', () => {
  it.each([
    ['GET', '/%', 400],
    ['GET', `/v1/runs/${'x'.repeat(300)}`, 414],
    ['GET', '/v1/runs/%E0%A4%A', 400],
    ['GET', '/nowhere', 404],
  ] as const)('%s %s → %i envelope', async (method, url, status) => {
    const res = await app.inject({ method, url, headers: as(ALICE) });
    expect(res.statusCode).toBe(status);
    expect(isEnvelope(res.body), res.body).toBe(true);
    expect(res.body).not.toContain('FST_');
  });

  it('bad JSON, an empty JSON body and a foreign content type are stable 4xx codes', async () => {
    const post = (payload: string, type: string) =>
      app.inject({ method: 'POST', url: '/v1/runs', headers: as(ALICE, { 'content-type': type }), payload });
    const bad = await post('{"input": nope', 'application/json');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: { code: 'invalid_json', message: 'the body is not valid JSON' } });
    const empty = await post('', 'application/json');
    expect(empty.statusCode).toBe(400);
    expect(isEnvelope(empty.body)).toBe(true);
    const proto = await post('{"input":"x","__proto__":{"admin":true}}', 'application/json');
    expect(proto.statusCode).toBe(400);
    expect(isEnvelope(proto.body)).toBe(true);
    const xml = await post('<run/>', 'application/xml');
    expect(xml.statusCode).toBe(415);
    expect(xml.json().error.code).toBe('unsupported_media_type');
    // text/plain is no exception (Fastify would parse it by default and hand a handler a string).
    for (const url of ['/v1/runs', '/v1/runs/some-run/cancel']) {
      const text = await app.inject({
        method: 'POST',
        url,
        headers: as(ALICE, { 'content-type': 'text/plain; charset=utf-8' }),
        payload: '{"input":"x"}',
      });
      expect(text.statusCode, url).toBe(415);
      expect(text.json().error.code).toBe('unsupported_media_type');
    }
  });

  it("Bull Board's own errors come back in the envelope without their message", async () => {
    const basic = `Basic ${Buffer.from(`ops:${OPERATOR.key}`).toString('base64')}`;
    for (const url of ['/admin/queues/api/queues/no-such-queue/1', '/admin/queues/api/queues/rein-steps/no-such-job']) {
      const res = await app.inject({ method: 'GET', url, headers: { authorization: basic } });
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(isEnvelope(res.body), res.body).toBe(true);
    }
    const broken = vi
      .spyOn(rt.scheduler.queues[0]!, 'getJobCounts')
      .mockRejectedValueOnce(new Error('ERR internal detail at 10.0.0.7:6379'));
    const res = await app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues?activeQueue=rein-steps',
      headers: { authorization: basic },
    });
    broken.mockRestore();
    expect(res.statusCode).toBe(500);
    expect(isEnvelope(res.body)).toBe(true);
    expect(res.body).not.toContain('10.0.0.7');
  });
});
