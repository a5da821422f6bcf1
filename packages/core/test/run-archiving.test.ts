import { describe, expect, it } from 'vitest';
import { revisionOf, sameRevision } from '../src/adapters/redis/hot-runs.js';
import { retirable } from '../src/features/archive/run-archiving.js';
import { archiveDoc } from './archive-fixture.js';

describe('hot retention’s policy', () => {
  const doc = archiveDoc({ id: 'r1' });
  const saga = (status: 'pending' | 'running' | 'done' | 'failed' | 'declined') => ({
    schemaVersion: 1 as const,
    round: 1,
    status,
    trigger: 'auto' as const,
    requestedBy: 'system',
    steps: [],
    createdAt: doc.run.updatedAt,
    updatedAt: doc.run.updatedAt,
  });

  it('lets a finished run leave Redis only when nothing of it can still change there', () => {
    expect(retirable(doc)).toBe(true);
    expect(retirable({ ...doc, run: { ...doc.run, status: 'running' } })).toBe(false);
    expect(retirable({ ...doc, approvals: [{ ...doc.approvals[0]!, status: 'pending' }] })).toBe(false);
    for (const status of ['pending', 'running', 'failed'] as const)
      expect(retirable({ ...doc, compensation: saga(status) }), status).toBe(false);
    for (const status of ['done', 'declined'] as const) expect(retirable({ ...doc, compensation: saga(status) }), status).toBe(true);
  });

  it('orders revisions by parts that only grow: a later event, step, version or saga change is a new revision', () => {
    const base = revisionOf(doc);
    expect(sameRevision(base, revisionOf(structuredClone(doc)))).toBe(true);
    const later = { ...doc, events: [...doc.events, { id: '9999999999999-0', event: doc.events[0]!.event }] };
    expect(sameRevision(base, revisionOf(later))).toBe(false);
    expect(revisionOf(later)[2]).toBeGreaterThan(base[2]!); // the last event's time
    expect(revisionOf({ ...doc, compensation: saga('done') }).at(-1)).toBeGreaterThan(base.at(-1)!);
    expect(revisionOf({ ...doc, run: { ...doc.run, version: doc.run.version + 1 } })[0]).toBe(base[0]! + 1);
  });
});
