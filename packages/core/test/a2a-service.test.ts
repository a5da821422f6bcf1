import type { ApprovalView, Principal } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { createA2aService } from '../src/features/a2a/a2a-service.js';
import type { PushConfigStore, StoredPushConfig } from '../src/features/a2a/push-config-store.js';
import type { A2aTask } from '../src/policy/a2a/a2a-task.js';
import { runViewOf } from './run-view-fixture.js';

const principal: Principal = { tenantId: 'acme', userId: 'alice', roles: ['user'] } as Principal;

const run = runViewOf;

const parked = run({
  status: 'pending_approval',
  updatedAt: '2025-01-01T00:00:02.000Z',
  pendingApprovals: [
    {
      id: 'r1-ap',
      toolName: 'create_ticket',
      summary: 'open a ticket',
      arguments: {},
      risk: 'high',
      requiredRole: 'user',
      status: 'pending',
      deciders: [],
      expiresAt: 'x',
    } as unknown as ApprovalView,
  ],
});

/** A2A push configs over fakes: what a newly set config is first told. */
describe('A2A service: push-notification configs', () => {
  it("tells a new config the task's state after it is stored, not the one read before (a change in between saw no config)", async () => {
    // The run parks between the caller's read and the config's write: that commit's hook found no config to tell.
    const reads = [run(), parked];
    const held = new Map<string, StoredPushConfig>();
    const told: A2aTask[] = [];
    const a2a = createA2aService({
      runs: {
        get: async () => reads.shift() ?? parked,
        submit: async () => {
          throw new Error('not called');
        },
        cancel: async () => {
          throw new Error('not called');
        },
      },
      approvals: { get: async () => ({}) as never, decide: async () => ({}) as never },
      agents: [{ name: 'a', tools: [] } as never],
      version: 'v1',
      push: {
        configs: {
          byField: async (_task: string, field: string) => held.get(field) ?? null,
          put: async (c: StoredPushConfig) => {
            held.set(`${c.userId}:${c.id}`, c);
            return true;
          },
        } as unknown as PushConfigStore,
        notify: { registered: async (_c, task) => void told.push(task) },
        allowPrivate: true,
      },
    });
    await a2a.createPushConfig(principal, 'a', { taskId: 'r1', url: 'https://receiver.test/hook' });
    expect(told.map((t) => t.status.state)).toEqual(['TASK_STATE_INPUT_REQUIRED']);
  });
});
