import type { Principal } from '@rein/contract';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { A2aService } from '../src/features/a2a/a2a-service.js';
import { v03Door } from '../src/http/a2a-v03.js';
import type { Logger } from '../src/shared/logger.js';

const principal = { tenantId: 'acme', userId: 'alice', roles: ['user'] } as Principal;
const task = { id: 'r1', contextId: 'c1', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [], history: [] };

/** The v0.3 door over a service that keeps what it is asked. */
function doorOver() {
  const asked: Array<{ method: string; params: unknown }> = [];
  const a2a = {
    send: async (_p: unknown, _a: unknown, params: unknown) => {
      asked.push({ method: 'send', params });
      return task;
    },
    createPushConfig: async (_p: unknown, _a: unknown, params: unknown) => {
      asked.push({ method: 'createPushConfig', params });
      return params;
    },
  } as unknown as A2aService;
  const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as unknown as Logger;
  const door = v03Door({
    a2a,
    principal,
    agent: 'a',
    endpoint: 'http://rein.test/a2a/a',
    watch: async function* () {} as never,
    signal: new AbortController().signal,
    idle: () => {},
    logger,
  });
  return { asked, call: (method: string, params: unknown) => door.handle({ jsonrpc: '2.0', id: 1, method, params }) };
}

afterEach(() => vi.restoreAllMocks());

describe('A2A v0.3 door: push configs naming several schemes', () => {
  // A scheme a caller makes up, with a line of its own that would read as a log record.
  const forged = 'Basic\n{"level":50,"msg":"forged"}';
  const authentication = { schemes: ['Bearer', forged], credentials: 'secret' };

  it('keeps the first scheme and writes nothing of the caller’s to the console (set)', async () => {
    const warn = vi.spyOn(console, 'warn');
    const { asked, call } = doorOver();
    await call('tasks/pushNotificationConfig/set', {
      taskId: 'r1',
      pushNotificationConfig: { id: 'hook', url: 'https://hooks.test/x', authentication },
    });
    expect(asked).toMatchObject([{ method: 'createPushConfig', params: { authentication: { scheme: 'Bearer', credentials: 'secret' } } }]);
    expect(warn).not.toHaveBeenCalled();
  });

  it('keeps the first scheme and writes nothing of the caller’s to the console (a message’s config)', async () => {
    const warn = vi.spyOn(console, 'warn');
    const { asked, call } = doorOver();
    await call('message/send', {
      message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
      configuration: { blocking: false, pushNotificationConfig: { url: 'https://hooks.test/x', authentication } },
    });
    expect(asked).toMatchObject([
      { method: 'send', params: { configuration: { taskPushNotificationConfig: { authentication: { scheme: 'Bearer' } } } } },
    ]);
    expect(warn).not.toHaveBeenCalled();
  });
});
