import type { Approval } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { gate } from '../../src/policy/step/step-policy.js';
import { decision, run } from './support.js';

/**
 * Triage (pure, `gate` in policy/step/step-policy.ts): what a step job finds before anything
 * is decided — skip it, the step was committed, it is still parked, act on the journaled
 * reply, or ask the model.
 */

describe('triage', () => {
  it('skips a job for a finished run or a future step, and only ensures the next job for a past one', () => {
    expect(gate(null, 0, [], null).kind).toBe('skip');
    expect(gate(run({ status: 'succeeded' }), 2, [], null).kind).toBe('skip');
    expect(gate(run(), 3, [], null).kind).toBe('skip');
    expect(gate(run(), 1, [], null).kind).toBe('already_committed');
  });

  it('keeps a parked step parked while an approval of it is pending, and acts on a journaled decision', () => {
    const pending = { step: 2, status: 'pending' } as Approval;
    expect(gate(run({ status: 'pending_approval' }), 2, [pending], null).kind).toBe('parked');
    expect(gate(run({ status: 'pending_approval' }), 2, [{ ...pending, status: 'approved' }], decision())).toMatchObject({ kind: 'act' });
    expect(gate(run(), 2, [], null).kind).toBe('decide');
  });

  it('keeps a waiting step parked while a child is live, and lets it act once every child ended or is gone', () => {
    const waiting = run({ status: 'waiting', pendingChildren: ['a', 'b'] });
    expect(gate(waiting, 2, [], null, [{ status: 'running' }, { status: 'succeeded' }])).toEqual({ kind: 'parked' });
    expect(gate(waiting, 2, [], null, [{ status: 'failed' }, null]).kind).toBe('decide');
  });
});
