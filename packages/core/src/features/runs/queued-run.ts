import { type RunRecord, ZERO_USAGE } from '@rein/contract';
import { traceIdOf } from '../../adapters/tracing/trace-context.js';

/** What a new run is given: who it is for, what it runs, within which limits, and anything else it starts with. */
export type NewRun = Pick<RunRecord, 'id' | 'tenantId' | 'userId' | 'roles' | 'agent' | 'input' | 'metadata' | 'limits'> &
  Partial<RunRecord> & { traceparent: string };

/** A run as it is created (pure): queued at step 0, nothing spent, due its limits' timeout after `at`. */
export function queuedRun(fields: NewRun, at: number): RunRecord {
  const created = new Date(at).toISOString();
  return {
    schemaVersion: 1,
    traceId: traceIdOf(fields.traceparent),
    status: 'queued',
    step: 0,
    usage: ZERO_USAGE,
    costUsd: 0,
    pendingApprovals: [],
    version: 0,
    createdAt: created,
    updatedAt: created,
    deadlineAt: new Date(at + fields.limits.timeoutMs).toISOString(),
    ...fields,
  };
}
