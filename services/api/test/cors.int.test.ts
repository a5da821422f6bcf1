import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

// REIN_CORS_ORIGINS: a browser page on a listed origin may call the API (its doors
// included) with a key in Authorization; any other origin gets what it gets with CORS off.
const USER = { key: 'cors-test-user-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };
const PAGE = 'http://localhost:5173';
const ELSEWHERE = 'https://evil.example.com';

let redis: TestRedis;
const runtimes: Runtime[] = [];
const apps: FastifyInstance[] = [];
let base: string;
let plainBase: string;

async function startApi(env: Record<string, string>): Promise<string> {
  const rt = await createRuntime(
    optionsFromEnv({ REDIS_URL: redis.url, REIN_API_KEYS: JSON.stringify([USER]), LOG_LEVEL: 'silent', ...env }),
    'api-cors-test',
    'producer',
    orderApp,
  );
  runtimes.push(rt);
  const app = createApiApp(rt);
  apps.push(app);
  return app.listen({ port: 0, host: '127.0.0.1' });
}

beforeAll(async () => {
  redis = await startTestRedis();
  base = await startApi({ REIN_CORS_ORIGINS: `${PAGE},https://chat.example.com` });
  plainBase = await startApi({});
});
afterAll(async () => {
  for (const app of apps) await app.close();
  for (const rt of runtimes) await rt.close();
  await redis.stop();
});

const preflight = (url: string, origin: string, method = 'POST') =>
  fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
  });
const chatBody = () => ({
  id: `chat-${crypto.randomUUID()}`,
  trigger: 'submit-message',
  messages: [{ id: crypto.randomUUID(), role: 'user', parts: [{ type: 'text', text: '查订单 A12345 状态' }] }],
});

describe('CORS for the listed origins', () => {
  it('answers a preflight before authentication: the origin, the methods, the headers asked for', async () => {
    for (const path of ['/v1/chat/order-assistant', '/v1/ag-ui/order-assistant', '/v1/runs', '/lg/threads', '/mcp']) {
      const res = await preflight(`${base}${path}`, PAGE);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe(PAGE);
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST, PATCH, DELETE');
      expect(res.headers.get('access-control-allow-headers')).toBe('authorization,content-type');
      expect(res.headers.get('access-control-max-age')).toBe('600');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('vary')).toMatch(/origin/i);
    }
  });

  it('a chat stream (taken over from Fastify) carries the CORS headers a browser needs to read it', async () => {
    const abort = new AbortController();
    const res = await fetch(`${base}/v1/chat/order-assistant`, {
      method: 'POST',
      headers: { origin: PAGE, authorization: `Bearer ${USER.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody()),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(res.headers.get('access-control-expose-headers')).toContain('x-vercel-ai-ui-message-stream');
    expect(res.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    abort.abort();
  });

  it('the MCP transport (raw writes) and plain JSON answers carry them too, errors included', async () => {
    const mcp = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        origin: PAGE,
        authorization: `Bearer ${USER.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cors-test', version: '1' } },
      }),
    });
    expect(mcp.status).toBe(200);
    expect(mcp.headers.get('access-control-allow-origin')).toBe(PAGE);
    await mcp.text();

    const created = await fetch(`${base}/v1/runs`, {
      method: 'POST',
      headers: { origin: PAGE, authorization: `Bearer ${USER.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: '查订单 A12345 状态' }),
    });
    expect(created.status).toBe(202);
    expect(created.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(created.headers.get('access-control-expose-headers')).toBe(
      'location, content-location, idempotent-replayed, x-vercel-ai-ui-message-stream',
    );

    // A page must be able to read why it was refused.
    const refused = await fetch(`${base}/v1/chat/order-assistant`, {
      method: 'POST',
      headers: { origin: PAGE, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
  });

  it('an origin not listed gets nothing: no headers, its preflight a 404 as with CORS off', async () => {
    for (const origin of [ELSEWHERE, 'http://localhost:5174', `${PAGE}.evil.example.com`, 'null']) {
      const res = await preflight(`${base}/v1/chat/order-assistant`, origin);
      expect(res.status, origin).toBe(404);
      expect(res.headers.get('access-control-allow-origin'), origin).toBeNull();
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
      const get = await fetch(`${base}/v1/runs`, { headers: { origin, authorization: `Bearer ${USER.key}` } });
      expect(get.status).toBe(200);
      expect(get.headers.get('access-control-allow-origin'), origin).toBeNull();
    }
    // Server to server (no Origin): nothing changes.
    const direct = await fetch(`${base}/v1/runs`, { headers: { authorization: `Bearer ${USER.key}` } });
    expect(direct.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('MCP refuses a call from an origin not listed, key or not (its transport guards against DNS rebinding)', async () => {
    for (const [url, origin] of [
      [base, ELSEWHERE],
      [plainBase, PAGE],
    ] as const) {
      const res = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          origin,
          authorization: `Bearer ${USER.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(res.status, origin).toBe(403);
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32000);
    }
  });
});

describe('CORS off (REIN_CORS_ORIGINS unset, the default)', () => {
  it('answers no origin, and a preflight is an unknown route', async () => {
    const res = await preflight(`${plainBase}/v1/chat/order-assistant`, PAGE);
    expect(res.status).toBe(404);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const get = await fetch(`${plainBase}/v1/runs`, { headers: { origin: PAGE, authorization: `Bearer ${USER.key}` } });
    expect(get.status).toBe(200);
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
  });
});
