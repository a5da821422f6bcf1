import { connect, type Socket } from 'node:net';
import { optionsFromEnv } from '@rein/core';
import { createRuntime, type Runtime } from '@rein/core/internal';
import { LocalRedis } from '@rein/core/testing';
import orderApp from '@rein/example-order-assistant';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../src/app.js';

const USER = { key: 'slow-test-user-key', tenantId: 'acme', userId: 'alice', roles: ['user'] };

let redis: LocalRedis;
let rt: Runtime;
let app: FastifyInstance;
let port: number;
beforeAll(async () => {
  redis = await LocalRedis.start();
  rt = await createRuntime(
    optionsFromEnv({
      REDIS_URL: redis.url,
      REIN_API_KEYS: JSON.stringify([USER]),
      LOG_LEVEL: 'silent',
      REIN_HTTP_REQUEST_TIMEOUT_MS: '1000',
    }),
    'api-slow-test',
    'producer',
    orderApp,
  );
  app = createApiApp(rt);
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});
afterAll(async () => {
  await app.close();
  await rt.close();
  await redis.stop();
});

/** Opens a raw socket, writes `head`, and collects whatever the server sends until it closes the socket. */
function rawRequest(head: string): { socket: Socket; reply: Promise<string> } {
  const socket = connect({ host: '127.0.0.1', port });
  socket.write(head);
  const reply = new Promise<string>((resolve) => {
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('close', () => resolve(data));
    socket.on('error', () => resolve(data));
  });
  return { socket, reply };
}

describe('slow clients (issue 9 item 9)', () => {
  it('an unauthenticated request is refused before its body arrives', async () => {
    const { socket, reply } = rawRequest(
      `POST /%76%31/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"input":"`,
    );
    const first = await new Promise<string>((resolve) => socket.once('data', (chunk) => resolve(String(chunk))));
    expect(first).toMatch(/^HTTP\/1\.1 401 /);
    socket.destroy();
    await reply;
  });

  it('a body trickled past the request timeout gets 408 in the envelope and the socket is closed', async () => {
    const { socket, reply } = rawRequest(
      `POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${USER.key}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"input":"`,
    );
    const trickle = setInterval(() => socket.writable && socket.write('x'), 100);
    const text = await reply; // resolves only when the server closes the socket
    clearInterval(trickle);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'request_timeout', message: 'the request took too long to arrive' },
    });
  });
});

describe('/metrics while Redis is down (item 10)', () => {
  it('answers 200 with rein_redis_up 0 and without Redis-derived series; /readyz is a 503 envelope naming nothing internal', async () => {
    const up = await app.inject({ method: 'GET', url: '/metrics' });
    expect(up.body).toMatch(/rein_redis_up\{service="api-slow-test"\} 1/);
    expect(up.body).toMatch(/rein_queue_jobs\{state="waiting",shard="0",service="api-slow-test"\} \d+/);

    await redis.kill();
    try {
      const down = await app.inject({ method: 'GET', url: '/metrics' });
      expect(down.statusCode).toBe(200);
      expect(down.body).toMatch(/rein_redis_up\{service="api-slow-test"\} 0/);
      expect(down.body).not.toMatch(/rein_queue_jobs\{/);
      expect(down.body).toContain('rein_runs_submitted_total');
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({ error: { code: 'redis_unavailable', message: 'Redis is not reachable' } });
    } finally {
      await redis.start();
    }
    await expect.poll(async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode, { timeout: 15_000 }).toBe(200);
    const back = await app.inject({ method: 'GET', url: '/metrics' });
    expect(back.body).toMatch(/rein_redis_up\{service="api-slow-test"\} 1/);
  });
});
