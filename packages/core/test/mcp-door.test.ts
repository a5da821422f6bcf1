import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Principal, RunView } from '@rein/contract';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMcpDoor, type McpDoorDeps } from '../src/features/mcp-door/mcp-door.js';
import type { WatchRun } from '../src/features/runs/watch-run.js';
import { createLogger } from '../src/shared/logger.js';
import { runViewOf } from './run-view-fixture.js';

const principal = { tenantId: 'acme', userId: 'alice', roles: ['user'] } as Principal;

const run = (over: Partial<RunView> = {}): RunView => runViewOf({ status: 'pending_approval', step: 2, ...over });

/** The door over fake runs, and the MCP SDK's own client connected to it through its in-memory transport. */
async function connect(runs: McpDoorDeps['runs'], watch: WatchRun) {
  const door = createMcpDoor({ runs, agents: [{ name: 'a', tools: [] } as never], version: 'v1', logger: createLogger('silent', 'test') });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await door.server(principal, watch, new AbortController().signal).connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  return client;
}

const notCalled = async (): Promise<never> => {
  throw new Error('not called');
};
const still: WatchRun = async function* () {};

describe('MCP door: tasks', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a tasks/result held on a parked task reads the run when it moves, not on a timer', async () => {
    let current = run();
    let reads = 0;
    let moved: () => void = () => {};
    // The run's event stream: it moves once, when the test says so.
    const watch: WatchRun = async function* () {
      await new Promise<void>((resolve) => {
        moved = resolve;
      });
      yield [{}];
    };
    const get = async () => {
      reads++;
      return current;
    };
    const client = await connect({ get, submit: notCalled, cancel: notCalled }, watch);

    const result = client.experimental.tasks.getTaskResult('r1', CallToolResultSchema, { timeout: 3_600_000 });
    await vi.advanceTimersByTimeAsync(1);
    const held = reads;
    // A person takes a while to decide: the held request reads nothing meanwhile.
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(reads).toBe(held);
    current = run({ status: 'succeeded', finalAnswer: 'done' });
    moved();
    const answered = await result;
    expect(answered.content).toEqual([{ type: 'text', text: 'done' }]);
    await client.close();
  });

  it('a tasks/cancel that could not cancel the run says so, rather than answering the task as if it had', async () => {
    const cancel = async (): Promise<never> => {
      throw new Error('the store is unreachable');
    };
    const client = await connect({ get: async () => run(), submit: notCalled, cancel }, still);
    await expect(client.experimental.tasks.cancelTask('r1')).rejects.toThrow(/could not cancel task r1/);
    await client.close();
  });
});
