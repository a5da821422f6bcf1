import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { LocalRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApproverApp } from '../src/app.js';

const APPROVER = { key: 'approver-sec-test-key', tenantId: 'acme', userId: 'carol', roles: ['approver'] };

let redis: LocalRedis;
let rt: Runtime;
let app: FastifyInstance;
beforeAll(async () => {
  redis = await LocalRedis.start();
  rt = await createRuntime(
    optionsFromEnv({ REDIS_URL: redis.url, REIN_API_KEYS: JSON.stringify([APPROVER]), LOG_LEVEL: 'silent' }),
    'approver-sec-test',
    'producer',
    orderApp,
  );
  app = createApproverApp(rt);
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await rt.close();
  await redis.stop();
});

describe('approver: authentication is on the route (issue 9 items 1 and 2)', () => {
  it.each([
    ['GET', '/%76%31/approvals'],
    ['GET', '/v%31/approvals?status=pending'],
    ['GET', '/%2576%2531/approvals'],
    ['GET', '/%76%31/effects/uncertain'],
    ['POST', '/%76%31/approvals/some-id/approve'],
    ['POST', '/v%31/approvals/some-id/reject'],
    ['GET', '/%76%31/me'],
  ] as const)('%s %s without a key is 401 or 404 in the envelope', async (method, url) => {
    const res = await app.inject({ method, url, ...(method === 'POST' ? { payload: { reason: 'x' } } : {}) });
    expect([401, 404], `${res.statusCode} ${res.body}`).toContain(res.statusCode);
    expect(Object.keys(res.json().error)).toEqual(['code', 'message']);
  });

  it('a non-ASCII bearer token of a key’s length is 401', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/v1/approvals',
      headers: { authorization: `Bearer ${APPROVER.key.slice(0, -1)}ü` },
    });
    expect(res.statusCode).toBe(401);
    expect(
      (await app.inject({ method: 'GET', url: '/v1/approvals', headers: { authorization: `Bearer ${APPROVER.key}` } })).statusCode,
    ).toBe(200);
  });
});

describe('approver console (item 13, issue 33)', () => {
  /** The page and every asset it loads, as the built index.html names them. */
  const consoleUrls = async () => {
    const page = await app.inject({ method: 'GET', url: '/console' });
    const assets = [...page.body.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
    return { page, urls: ['/console', ...assets] };
  };

  it('may not be framed, runs no inline script or style, and loads nothing from elsewhere', async () => {
    const { page, urls } = await consoleUrls();
    expect(urls.some((u) => u.endsWith('.js'))).toBe(true);
    expect(urls.some((u) => u.endsWith('.css'))).toBe(true);
    for (const url of urls) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
    // Every script has a src of ours; no <style> element, no style attribute, no absolute URL.
    expect(page.body.match(/<script(?![^>]*\ssrc="\/console\/)[^>]*>/g)).toBeNull();
    expect(page.body).not.toMatch(/<style|\sstyle=|https?:\/\//);
  });

  it('answers 404 for an asset it does not have', async () => {
    expect((await app.inject({ method: 'GET', url: '/console/assets/nope.js' })).statusCode).toBe(404);
  });
});

describe('approver /metrics while Redis is down (item 10)', () => {
  it('answers 200 and says rein_redis_up 0', async () => {
    await redis.kill();
    try {
      const res = await app.inject({ method: 'GET', url: '/metrics' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatch(/rein_redis_up\{service="approver-sec-test"\} 0/);
      const list = await app.inject({ method: 'GET', url: '/v1/approvals', headers: { authorization: `Bearer ${APPROVER.key}` } });
      expect(list.statusCode).toBe(503);
      expect(list.json()).toEqual({ error: { code: 'unavailable', message: 'service temporarily unavailable' } });
    } finally {
      await redis.start();
    }
  });
});
