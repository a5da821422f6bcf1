// The routes' `schema.hide` is typed by the OpenAPI plugin.
import type {} from '@fastify/swagger';
import type { Principal } from '@rein/contract';
import Fastify from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import type { A2aService } from '../src/features/a2a/a2a-service.js';
import { registerA2aRoutes } from '../src/http/a2a-routes.js';
import type { EventStreams } from '../src/http/sse.js';
import { TooManyStreamsError } from '../src/shared/errors.js';
import type { Logger } from '../src/shared/logger.js';

const principal = { tenantId: 'acme', userId: 'alice', roles: ['user'] } as Principal;
const parked = { id: 'r1', contextId: 'c1', status: { state: 'TASK_STATE_INPUT_REQUIRED' } };

/** The A2A endpoint of a caller whose stream slots are all taken. */
async function endpointWithNoSlotLeft() {
  const app = Fastify();
  app.decorateRequest('principal', { getter: () => principal });
  registerA2aRoutes(app, {
    a2a: { get: async () => parked, send: async () => parked } as unknown as A2aService,
    runs: { events: async () => ({}) as never },
    streams: {
      hold: () => {
        throw new TooManyStreamsError(2, 'user');
      },
    } as unknown as EventStreams,
    logger: { error: vi.fn() } as unknown as Logger,
  });
  await app.ready();
  return app;
}

describe('A2A 1.0 streaming methods past the caller’s stream slots', () => {
  it.each([
    ['SubscribeToTask', { id: 'r1' }],
    ['SendStreamingMessage', { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }],
  ])('%s answers a JSON-RPC error (429 in its data), as every other refusal of the endpoint', async (method, params) => {
    const app = await endpointWithNoSlotLeft();
    const res = await app.inject({
      method: 'POST',
      url: '/a2a/order-assistant',
      headers: { 'a2a-version': '1.0' },
      payload: { jsonrpc: '2.0', id: 7, method, params },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32000, data: { code: 'too_many_streams', status: 429 } } });
    await app.close();
  });
});
