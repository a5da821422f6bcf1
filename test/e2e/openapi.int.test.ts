import { createApiApp } from '@rein/api';
import { createApproverApp } from '@rein/approver';
import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const KEY = { key: 'openapi-test-user-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };

interface Operation {
  security?: unknown;
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  requestBody?: unknown;
  parameters?: Array<{ in: string; name: string }>;
}
type Document = {
  openapi: string;
  info: { license?: unknown };
  servers?: unknown[];
  paths: Record<string, Record<string, Operation>>;
};

let redis: TestRedis;
let rt: Runtime;
const services: Array<{ name: string; app: FastifyInstance; routes: Array<{ method: string; url: string }> }> = [];

beforeAll(async () => {
  redis = await startTestRedis();
  rt = await createRuntime(
    optionsFromEnv({ REDIS_URL: redis.url, REIN_API_KEYS: JSON.stringify([KEY]), LOG_LEVEL: 'silent' }),
    'openapi-test',
    'producer',
    orderApp,
  );
  for (const [name, build] of [
    ['api', createApiApp],
    ['approver', createApproverApp],
  ] as const) {
    const app = build(rt);
    // Every route the service registers, as Fastify sees it (not as the document claims).
    const routes: Array<{ method: string; url: string }> = [];
    app.addHook('onRoute', (r: RouteOptions) => {
      for (const method of [r.method].flat()) routes.push({ method: method.toLowerCase(), url: r.url });
    });
    await app.ready();
    services.push({ name, app, routes });
  }
});
afterAll(async () => {
  for (const { app } of services) await app.close();
  await rt.close();
  await redis.stop();
});

const documentOf = async (app: FastifyInstance) => {
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  return res.json() as Document;
};
/** Fastify's `/v1/runs/:id` as OpenAPI writes it. */
const openapiPath = (url: string) => url.replace(/:([A-Za-z]+)/g, '{$1}');

describe('GET /openapi.json', () => {
  it('is served without auth and validates against the OpenAPI 3.1 schema', async () => {
    for (const { app } of services) {
      const doc = await documentOf(app);
      expect(doc.openapi).toBe('3.1.0');
      const result = await new Validator().validate(doc as never);
      expect(result.errors).toBeUndefined();
      expect(result.valid).toBe(true);
    }
  });

  it('documents every /v1 route with a bearer requirement, its answers and its error envelope', async () => {
    for (const { name, app, routes } of services) {
      const doc = await documentOf(app);
      const v1 = routes.filter((r) => r.url.startsWith('/v1') && r.method !== 'head');
      expect(v1.length, name).toBeGreaterThan(5);
      for (const { method, url } of v1) {
        const op = doc.paths[openapiPath(url)]?.[method];
        expect(op, `${name}: ${method.toUpperCase()} ${url} has no schema in the document`).toBeDefined();
        expect(op?.security, url).toEqual([{ bearer: [] }]);
        const statuses = Object.keys(op?.responses ?? {});
        expect(
          statuses.some((s) => s.startsWith('2')),
          `${url} documents no success answer`,
        ).toBe(true);
        const error = op?.responses?.['401']?.content?.['application/json']?.schema as { properties?: Record<string, unknown> };
        expect(error?.properties?.error, `${url} documents no error envelope`).toBeDefined();
      }
      // Nothing outside /v1 (probes, console, queue board) leaks into the contract.
      expect(Object.keys(doc.paths).every((p) => p.startsWith('/v1'))).toBe(true);
    }
  });

  it('carries request bodies, queries and the headers that change behaviour', async () => {
    const [api, approver] = await Promise.all(services.map((s) => documentOf(s.app)));
    const submit = api?.paths['/v1/runs']?.post;
    expect(submit?.requestBody).toMatchObject({ content: { 'application/json': { schema: { required: ['input'] } } } });
    expect(submit?.parameters?.map((p) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['header:idempotency-key']));
    expect(Object.keys(submit?.responses ?? {})).toEqual(expect.arrayContaining(['200', '202', '409', '422', '429']));
    const list = api?.paths['/v1/runs']?.get;
    expect(list?.parameters?.map((p) => p.name)).toEqual(
      expect.arrayContaining(['status', 'cursor', 'limit', 'createdAfter', 'q', 'from', 'to']),
    );
    const usage = api?.paths['/v1/usage']?.get;
    expect(usage?.parameters?.map((p) => p.name)).toEqual(expect.arrayContaining(['from', 'to', 'groupBy']));
    expect(Object.keys(usage?.responses ?? {})).toEqual(expect.arrayContaining(['200', '403', '409']));
    const events = api?.paths['/v1/runs/{id}/events']?.get;
    expect(events?.parameters?.map((p) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['header:last-event-id', 'path:id']));
    expect(events?.responses?.['200']?.content?.['text/event-stream']).toBeDefined();
    const approve = approver?.paths['/v1/approvals/{id}/approve']?.post;
    expect(approve?.requestBody).toMatchObject({ content: { 'application/json': { schema: { properties: { arguments: {} } } } } });
    expect(Object.keys(approve?.responses ?? {})).toEqual(expect.arrayContaining(['200', '403', '404', '409', '410']));
  });

  it('names its licence and its server, and every POST declares the 413 and 415 a body can earn', async () => {
    for (const { name, app, routes } of services) {
      const doc = await documentOf(app);
      expect(doc.info.license, name).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
      expect(doc.servers, name).toEqual([expect.objectContaining({ url: '/' })]);
      const posts = routes.filter((r) => r.url.startsWith('/v1') && r.method === 'post');
      expect(posts.length, name).toBeGreaterThan(1);
      for (const { url } of posts) {
        const responses = doc.paths[openapiPath(url)]?.post?.responses ?? {};
        expect(Object.keys(responses), url).toEqual(expect.arrayContaining(['413', '415']));
      }
    }
  });
});
