import type { RunView } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { awaitsDecision, isSettled } from '../src/policy/run/run-settled.js';

type Approvals = RunView['pendingApprovals'];
const approval = (status: 'pending' | 'approved') => ({ id: 'r.3.c', status }) as Approvals[number];
const run = (status: RunView['status'], pendingApprovals: Approvals) => ({ status, pendingApprovals });

describe('whether a run waits on a person', () => {
  it('is parked while an approval is undecided', () => {
    expect(awaitsDecision(run('pending_approval', [approval('pending')]))).toBe(true);
    expect(isSettled(run('pending_approval', [approval('pending')]))).toBe(true);
  });

  it('is not parked once every approval is decided, though the status waits for the resume job', () => {
    expect(awaitsDecision(run('pending_approval', []))).toBe(false);
    expect(awaitsDecision(run('pending_approval', [approval('approved')]))).toBe(false);
    expect(isSettled(run('pending_approval', []))).toBe(false);
  });

  it('is settled when finished, and not while running', () => {
    expect(isSettled(run('succeeded', []))).toBe(true);
    expect(isSettled(run('running', []))).toBe(false);
  });
});
