import type { Compensation } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { ROLLBACK_DECLINED_TURN, ROLLBACK_FAILED_TURN, ROLLBACK_UNDOING_TURN, rollbackMark } from '../src/features/runs/session-history.js';

const saga = (status: Compensation['status']): Compensation => ({
  schemaVersion: 1,
  round: 1,
  status,
  trigger: 'auto',
  requestedBy: 'alice',
  steps: [],
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-01T00:00:00.000Z',
});

describe('a rolled-back turn', () => {
  it('leaves the history only once its undo finished (or it had nothing to undo), and is marked while its writes stand', () => {
    expect(rollbackMark(null)).toBeNull();
    expect(rollbackMark(saga('done'))).toBeNull();
    expect(rollbackMark(saga('failed'))).toBe(ROLLBACK_FAILED_TURN);
    expect(rollbackMark(saga('declined'))).toBe(ROLLBACK_DECLINED_TURN);
    expect(rollbackMark(saga('running'))).toBe(ROLLBACK_UNDOING_TURN);
    expect(rollbackMark(saga('pending'))).toBe(ROLLBACK_UNDOING_TURN);
  });
});
