import type { ApprovalView } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { a2aSettled, a2aState, a2aTask } from '../src/policy/a2a/a2a-task.js';
import { runViewOf } from './run-view-fixture.js';

const run = runViewOf;

const approval = (status: ApprovalView['status']) =>
  ({
    id: 'r1-ap',
    toolName: 'create_ticket',
    summary: 'open a ticket',
    arguments: { orderNo: '1' },
    risk: 'high',
    requiredRole: 'user',
    status,
    deciders: [],
    expiresAt: 'x',
  }) as unknown as ApprovalView;

describe('a run as an A2A task', () => {
  it('maps every status onto a task state', () => {
    expect(a2aState(run({ status: 'queued' }))).toBe('TASK_STATE_SUBMITTED');
    expect(a2aState(run({ status: 'waiting' }))).toBe('TASK_STATE_WORKING');
    expect(a2aState(run({ status: 'pending_approval', pendingApprovals: [approval('pending')] }))).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(a2aState(run({ status: 'succeeded' }))).toBe('TASK_STATE_COMPLETED');
    expect(a2aState(run({ status: 'failed', reason: 'max_steps' }))).toBe('TASK_STATE_FAILED');
    expect(a2aState(run({ status: 'failed', reason: 'input_rejected' }))).toBe('TASK_STATE_REJECTED');
    expect(a2aState(run({ status: 'cancelled' }))).toBe('TASK_STATE_CANCELED');
  });

  it('is working, not input-required, once the last approval is decided and only the resume is left', () => {
    const decided = run({ status: 'pending_approval', pendingApprovals: [approval('approved')] });
    expect(a2aState(decided)).toBe('TASK_STATE_WORKING');
    expect(a2aSettled(a2aState(decided))).toBe(false);
  });

  it('carries each pending approval in the status message, and the answer and typed output as an artifact', () => {
    const parked = a2aTask(run({ status: 'pending_approval', sessionId: 's1', pendingApprovals: [approval('pending')] }));
    expect(parked.contextId).toBe('s1');
    expect(parked.status.message?.parts).toEqual([
      { text: expect.stringContaining('r1-ap') },
      { data: { approvals: [expect.objectContaining({ approvalId: 'r1-ap', summary: 'open a ticket' })] }, mediaType: 'application/json' },
    ]);
    const done = a2aTask(run({ status: 'succeeded', finalAnswer: 'done', output: { ok: true } }));
    expect(done.contextId).toBe('r1');
    expect(done.artifacts).toEqual([
      { artifactId: 'r1-answer', name: 'answer', parts: [{ text: 'done' }, { data: { ok: true }, mediaType: 'application/json' }] },
    ]);
  });
});
