import { appStateKey, type Tool, ToolError } from '@rein/core';
import { createRegistry } from '@rein/core/internal';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import app from '../src/index.js';

let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startTestRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

const ctx = (idempotencyKey: string) => ({
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user' as const],
  runId: 'r',
  step: 0,
  toolCallId: 'c',
  idempotencyKey,
  signal: AbortSignal.timeout(1000),
  logger: pino({ level: 'silent' }),
});

describe('the hello-agent example', () => {
  it('is a valid app: one agent, a read tool and a write tool that asks for approval', () => {
    const { agents, tools } = createRegistry(app, { redis });
    expect(agents.get('greeter').tools).toEqual(['find_greeting', 'send_greeting']);
    const send = tools.get('send_greeting') as Tool;
    expect(tools.get('find_greeting')?.approval({ name: 'Ada' }, ctx('k'))).toBeNull();
    expect(send.approval({ name: 'Ada' }, ctx('k'))).toEqual({ risk: 'high', summary: 'Send a greeting to Ada', requiredRole: 'approver' });
  });

  it('sends once per idempotency key, and says why it will not send to nobody', async () => {
    const send = createRegistry(app, { redis }).tools.get('send_greeting') as Tool;
    await send.execute({ name: 'Ada' }, ctx('r:1:c'));
    await send.execute({ name: 'Ada' }, ctx('r:1:c')); // a replayed step
    expect(await redis.hlen(appStateKey('hello-agent', 'acme', 'sent'))).toBe(1);
    await expect(send.execute({ name: 'nobody' }, ctx('r:2:c'))).rejects.toEqual(expect.any(ToolError));
  });
});
