import { describe, expect, it } from 'vitest';
import { awaitsJob, waitingForVersion } from '../src/policy/run/waiting-for-version.js';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const run = (status: string, extra: { queuedBehind?: string; pendingApprovals?: string[] } = {}) => ({
  status: status as 'queued',
  updatedAt: at(10),
  pendingApprovals: extra.pendingApprovals ?? [],
  ...(extra.queuedBehind ? { queuedBehind: extra.queuedBehind } : {}),
});

describe('a run waiting for a version nobody serves', () => {
  it('awaits a job when queued or running, when every approval it is parked on is decided, or while its saga undoes', () => {
    expect(awaitsJob(run('queued'), [], undefined)).toBe(true);
    expect(awaitsJob(run('running'), [], undefined)).toBe(true);
    // Behind its session, on children, on a person: no job yet.
    expect(awaitsJob(run('queued', { queuedBehind: 'r0' }), [], undefined)).toBe(false);
    expect(awaitsJob(run('waiting'), [], undefined)).toBe(false);
    const parked = run('pending_approval', { pendingApprovals: ['a', 'b'] });
    expect(
      awaitsJob(
        parked,
        [
          { id: 'a', status: 'approved' },
          { id: 'b', status: 'pending' },
        ],
        undefined,
      ),
    ).toBe(false);
    expect(awaitsJob(parked, [{ id: 'a', status: 'approved' }], undefined)).toBe(false); // b unknown: not decided
    expect(
      awaitsJob(
        parked,
        [
          { id: 'a', status: 'approved' },
          { id: 'b', status: 'rejected' },
        ],
        undefined,
      ),
    ).toBe(true);
    // Decided approvals leave the run's list: parked on none, its resume is queued.
    expect(awaitsJob(run('pending_approval'), [], undefined)).toBe(true);
    expect(awaitsJob(run('succeeded'), [], { status: 'running', updatedAt: at(20) })).toBe(true);
    expect(awaitsJob(run('succeeded'), [], { status: 'pending', updatedAt: at(20) })).toBe(false);
    expect(awaitsJob(run('succeeded'), [], undefined)).toBe(false);
  });

  it('says so only while no worker of the version lives, since the later of the last change and the last worker', () => {
    expect(waitingForVersion(run('queued'), undefined, 'v1', { workers: 1, lastWorkerAt: Date.parse(at(30)) })).toBeUndefined();
    expect(waitingForVersion(run('queued'), undefined, 'v1', { workers: 0 })).toEqual({ version: 'v1', since: at(10) });
    expect(waitingForVersion(run('queued'), undefined, 'v1', { workers: 0, lastWorkerAt: Date.parse(at(30)) })).toEqual({
      version: 'v1',
      since: at(30),
    });
    // An undo that started after the run's last change counts from the saga's change.
    expect(waitingForVersion(run('succeeded'), { status: 'running', updatedAt: at(40) }, 'v2', { workers: 0 })).toEqual({
      version: 'v2',
      since: at(40),
    });
  });
});
