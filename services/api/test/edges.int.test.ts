import { MAX_ID_LENGTH } from '@rein/contract';
import { optionsFromEnv } from '@rein/core';
import { createServiceApp } from '@rein/core/http';
import { createRuntime, loadConfig, type Runtime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

// The edges of the HTTP contract: what a client may name, how it says who it is, and
// who may read /metrics.
const ALICE = { key: 'edges-test-alice-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const OPERATOR = { key: 'edges-test-operator-key', tenantId: 'acme', userId: 'root', roles: ['operator'] };
const METRICS_TOKEN = 'edges-test-metrics-token';

let redis: TestRedis;
let rt: Runtime;
let app: FastifyInstance;
beforeAll(async () => {
  redis = await startTestRedis();
  rt = await createRuntime(
    optionsFromEnv({ REDIS_URL: redis.url, REIN_API_KEYS: JSON.stringify([ALICE, OPERATOR]), LOG_LEVEL: 'silent' }),
    'api-edges-test',
    'producer',
    orderApp,
  );
  app = createApiApp(rt);
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await rt.close();
  await redis.stop();
});

const as = (who: { key: string }) => ({ authorization: `Bearer ${who.key}` });
const submit = (sessionId: string, input = 'hello') =>
  app.inject({ method: 'POST', url: '/v1/runs', headers: as(ALICE), payload: { input, sessionId } });

describe('client-chosen ids are addressable (issue 24 item 4)', () => {
  it('a sessionId of the longest accepted length is created and read back', async () => {
    const longest = 's'.repeat(MAX_ID_LENGTH);
    expect((await submit(longest)).statusCode).toBe(202);
    const read = await app.inject({ method: 'GET', url: `/v1/sessions/${longest}`, headers: as(ALICE) });
    expect(read.statusCode).toBe(200);
    expect(read.json().runs).toHaveLength(1);
  });

  it.each([
    ['one character too long', 's'.repeat(MAX_ID_LENGTH + 1)],
    ['a lone surrogate', 'chat-\ud800'],
    ['a slash', 'a/b'],
    ['a space', 'a b'],
    ['a colon (a key separator)', 'a:runs'],
    ['percent-encoding', 'a%2Fb'],
    ['non-ASCII', 'chat-é'],
    ['dot-dot', '..'],
  ])('a sessionId with %s is 400 invalid_request, never a run that cannot be read', async (_what, sessionId) => {
    const res = await submit(sessionId);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('invalid_request');
  });

  it('the router and the schema share one bound: a path id one longer is refused, not routed', async () => {
    const res = await app.inject({ method: 'GET', url: `/v1/sessions/${'s'.repeat(MAX_ID_LENGTH + 1)}`, headers: as(ALICE) });
    expect(res.statusCode).toBe(414);
    expect(Object.keys(res.json().error)).toEqual(['code', 'message']);
  });

  it('the OpenAPI document states the same bound and charset for path ids and sessionId', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const param = doc.paths['/v1/sessions/{id}'].get.parameters.find((p: { name: string }) => p.name === 'id');
    const sessionId = doc.paths['/v1/runs'].post.requestBody.content['application/json'].schema.properties.sessionId;
    for (const schema of [param.schema, sessionId]) {
      expect(schema.maxLength).toBe(MAX_ID_LENGTH);
      expect(schema.pattern).toBeTypeOf('string');
    }
    expect(param.schema.pattern).toBe(sessionId.pattern);
  });
});

describe('the authorization scheme is case-insensitive (issue 24 item 7, RFC 7235 §2.1)', () => {
  it.each(['bearer', 'BEARER', 'BeArEr'])('%s <key> authenticates on /v1', async (scheme) => {
    const res = await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `${scheme} ${ALICE.key}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ userId: 'alice' });
  });

  it('and on the queue board, Bearer and Basic alike', async () => {
    const basic = Buffer.from(`root:${OPERATOR.key}`).toString('base64');
    for (const authorization of [`bearer ${OPERATOR.key}`, `basic ${basic}`, `BASIC ${basic}`]) {
      const res = await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { authorization } });
      expect(res.statusCode, authorization).toBe(200);
    }
  });

  it('a wrong key is still 401 whatever the case', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: 'bearer not-a-key' } });
    expect(res.statusCode).toBe(401);
  });
});

describe('REIN_METRICS_TOKEN guards /metrics (issue 24 item 13)', () => {
  it('unset: /metrics stays open (the default)', async () => {
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
  });

  it('set: /metrics needs Bearer <token>; an API key or a wrong token is 401', async () => {
    const guarded = createServiceApp(
      { ...rt, options: { ...rt.options, http: { ...rt.options.http, metricsToken: METRICS_TOKEN } } },
      () => {},
    );
    try {
      for (const authorization of [undefined, `Bearer ${OPERATOR.key}`, `Bearer ${METRICS_TOKEN}x`, `Basic ${METRICS_TOKEN}`]) {
        const res = await guarded.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
        expect(res.statusCode, String(authorization)).toBe(401);
        expect(res.json().error.code).toBe('unauthorized');
        expect(res.body).not.toContain('rein_');
      }
      const ok = await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization: `bearer ${METRICS_TOKEN}` } });
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toContain('rein_');
      // Probes stay open: orchestrators call them without credentials.
      expect((await guarded.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  it('a token too short to be a secret is a config error naming the variable', () => {
    expect(() => loadConfig({ REIN_METRICS_TOKEN: 'short' })).toThrow(/REIN_METRICS_TOKEN: at least 16 characters/);
  });
});
