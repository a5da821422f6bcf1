import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../../services/api/src/app.js';
import { createApproverApp } from '../../services/approver/src/app.js';

/**
 * Property-based fuzzing of the HTTP shell (issue 9): random paths, encodings, headers
 * and JSON shapes against the api and the approver, in process, on a real Redis.
 * Whatever comes in: never a 5xx, never a 2xx on a non-public route without a valid
 * key, every error in the envelope, and the service healthy afterwards.
 */
const USER = { key: 'fuzz-user-key-0001', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const ADMIN = { key: 'fuzz-admin-key-001', tenantId: 'acme', userId: 'root', roles: ['admin', 'approver'] };
const VALID_KEYS = new Set([USER.key, ADMIN.key]);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

let redis: TestRedis;
const services: Array<{ name: string; rt: Runtime; app: FastifyInstance }> = [];

beforeAll(async () => {
  redis = await startTestRedis();
  const config = optionsFromEnv({ REDIS_URL: redis.url, REIN_API_KEYS: JSON.stringify([USER, ADMIN]), LOG_LEVEL: 'silent' });
  for (const [name, create] of [
    ['api', createApiApp],
    ['approver', createApproverApp],
  ] as const) {
    const rt = await createRuntime(config, `fuzz-${name}`, 'producer', orderApp);
    const app = create(rt);
    await app.ready();
    services.push({ name, rt, app });
  }
});
afterAll(async () => {
  for (const { app, rt } of services) {
    await app.close();
    await rt.close();
  }
  await redis.stop();
});

const SEGMENTS = [
  'v1',
  'V1',
  '%76%31',
  'v%31',
  '%2576%2531',
  '%761',
  'runs',
  'r%75ns',
  'approvals',
  'me',
  'trace',
  'cancel',
  'approve',
  'reject',
  'snapshots',
  'admin',
  '%61dmin',
  'queues',
  'api',
  'console',
  'healthz',
  'metrics',
  'readyz',
  '',
  '.',
  '..',
  '%2e%2e',
  '%2f',
  '%00',
  '%',
  '%E0%A4%A',
  '%C3%A9',
  '%FF',
  '~',
  ';x',
];

/** A path segment: a word the routes know, a long or random one, or random text percent-encoded. */
const segment = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...SEGMENTS) },
  { weight: 1, arbitrary: fc.integer({ min: 90, max: 400 }).map((n) => 'x'.repeat(n)) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9%._~-]{0,12}$/) },
);
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom('?status=pending', '?status=queued&limit=0', '?limit=-1', '?limit=1e9', '?status[]=x', '?lastEventId=0', '?%zz=1'),
  fc.stringMatching(/^\?[A-Za-z0-9%=&[\]._-]{0,24}$/),
);
const path = fc
  .tuple(fc.array(segment, { minLength: 1, maxLength: 6 }), query)
  .map(([segments, q]) => `/${segments.join('/')}${q}`)
  // Streams stay open by design; their auth is covered by the same scope as every other /v1 route.
  .filter((p) => !/events/i.test(p));

const latin1 = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 40 });
const authorization = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(`Bearer ${USER.key}`, `Bearer ${ADMIN.key}`),
  fc.constantFrom(
    `Bearer ${USER.key.slice(0, -1)}é`,
    `bearer ${USER.key}`,
    `Bearer  ${USER.key}`,
    `Bearer ${USER.key} `,
    'Bearer',
    'Basic',
  ),
  latin1.map((s) => `Bearer ${s}`),
  latin1.map((s) => `Basic ${Buffer.from(`ops:${s}`, 'latin1').toString('base64')}`),
  fc.constant(`Basic ${Buffer.from(`ops:${ADMIN.key}`).toString('base64')}`),
  latin1,
);
const contentType = fc.option(
  fc.oneof(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/xml',
      'application/x-www-form-urlencoded',
    ),
    latin1,
  ),
  { nil: undefined },
);

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const jsonBody = fc.oneof(
  fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.stringify(v)),
  fc
    .record(
      {
        input: fc.oneof(fc.string({ maxLength: 50 }), fc.jsonValue({ maxDepth: 2 })),
        agent: fc.oneof(fc.string({ maxLength: 70 }), fc.constant('order-assistant')),
        metadata: fc.jsonValue({ maxDepth: 8 }),
        limits: fc.dictionary(fc.constantFrom('maxSteps', 'maxTokens', 'timeoutMs', 'other'), fc.jsonValue({ maxDepth: 1 })),
        comment: fc.string({ maxLength: 30 }),
        reason: fc.string({ maxLength: 30 }),
        arguments: fc.jsonValue({ maxDepth: 3 }),
      },
      { requiredKeys: [] },
    )
    .map((v) => JSON.stringify(v)),
  fc.integer({ min: 20, max: 3000 }).map((n) => `{"input":"hi","metadata":{"a":${deep(n)}}}`),
  fc.constantFrom(
    '',
    '{',
    '{"input":',
    'null',
    '[]',
    '"str"',
    '{"__proto__":{"x":1},"input":"hi"}',
    '{"constructor":{"prototype":{"x":1}}}',
  ),
  latin1,
);

const request = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
  url: path,
  authorization,
  contentType,
  idempotencyKey: fc.option(latin1, { nil: undefined }),
  body: fc.option(jsonBody, { nil: undefined }),
});
type FuzzRequest = typeof request extends fc.Arbitrary<infer T> ? T : never;

/** Routes anyone may call: health, readiness, metrics and the console's page and built assets. */
function isPublic(url: string): boolean {
  let p: string;
  try {
    // Dot segments resolve as a URL parser resolves them (inject does, and so may a proxy).
    p = decodeURIComponent(new URL(url, 'http://rein.test').pathname.replace(/%2f/gi, '%252f'));
  } catch {
    return false;
  }
  return ['/healthz', '/readyz', '/metrics', '/', '/console', '/console/'].includes(p) || /^\/console\/assets\/[^/]+$/.test(p);
}

/** As RFC 7235 reads credentials: the scheme in any case, then one or more spaces, then the token. */
const hasValidKey = (auth: string | undefined) => {
  if (!auth) return false;
  const bearer = /^Bearer +(\S+)$/i.exec(auth)?.[1];
  const basic = /^Basic +(\S+)$/i.exec(auth)?.[1];
  const token = bearer ?? (basic ? Buffer.from(basic, 'base64').toString('utf8').split(':').slice(1).join(':') : undefined);
  return token !== undefined && VALID_KEYS.has(token);
};

async function send(app: FastifyInstance, r: FuzzRequest) {
  const headers: Record<string, string> = {};
  if (r.authorization !== undefined) headers.authorization = r.authorization;
  if (r.contentType !== undefined) headers['content-type'] = r.contentType;
  if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
  const withBody = r.body !== undefined && !['GET', 'HEAD'].includes(r.method);
  return app.inject({ method: r.method as 'GET', url: r.url, headers, ...(withBody ? { payload: r.body } : {}) });
}

describe.each(['api', 'approver'])('fuzzing the %s HTTP shell', (name) => {
  it('never a 5xx, never a 2xx without a valid key, every error in the envelope; healthy after', async () => {
    const service = services.find((s) => s.name === name);
    if (!service) throw new Error(`no ${name} app`);
    const { app } = service;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const res = await send(app, r);
        const where = `${r.method} ${r.url} (${res.statusCode}) ${res.body.slice(0, 200)}`;
        expect(res.statusCode, where).toBeLessThan(500);
        if (res.statusCode < 300 && !isPublic(r.url)) expect(hasValidKey(r.authorization), where).toBe(true);
        if (res.statusCode >= 400 && r.method !== 'HEAD') {
          const body = JSON.parse(res.body);
          expect(Object.keys(body), where).toEqual(['error']);
          expect(Object.keys(body.error).sort(), where).toEqual(['code', 'message']);
          expect(body.error.code, where).toMatch(/^[a-z_]+$/);
        }
      }),
      { numRuns: RUNS, seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
    );
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${USER.key}` } })).json()).toMatchObject({
      userId: 'alice',
    });
  });
});
