import { randomUUID } from 'node:crypto';
import type { Approval, RunEvent, RunRecord, StepRecord } from '@rein/contract';

/** Records the ports' spec suites build runs from. */
export const TTL_SECONDS = 3600;
export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const iso = (ms: number) => new Date(ms).toISOString();

export function runRecord(over: Partial<RunRecord> = {}): RunRecord {
  return {
    schemaVersion: 1,
    id: randomUUID(),
    traceId: '0'.repeat(32),
    tenantId: 'acme',
    userId: 'alice',
    roles: ['user'],
    agent: 'helper',
    input: 'hi',
    metadata: {},
    limits: { maxSteps: 10, maxTokens: 50_000, timeoutMs: 300_000 },
    status: 'queued',
    step: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    costUsd: 0,
    pendingApprovals: [],
    version: 0,
    createdAt: iso(T0),
    updatedAt: iso(T0),
    deadlineAt: iso(T0 + 300_000),
    ...over,
  };
}

export const event = (run: RunRecord, type: string): RunEvent =>
  ({ type, runId: run.id, step: run.step, at: run.updatedAt, data: {} }) as RunEvent;

export const stepRecord = (index: number): StepRecord => ({
  schemaVersion: 1,
  index,
  model: 'fake-model',
  thought: `step ${index}`,
  toolCalls: [],
  usage: { promptTokens: 10, completionTokens: 1, totalTokens: 11 },
  costUsd: 0,
  durationMs: 1,
  finishedAt: iso(T0 + 1000),
});

export const approval = (run: RunRecord, over: Partial<Approval> = {}): Approval => ({
  schemaVersion: 1,
  id: `${run.id}.${run.step}.0`,
  kind: 'tool',
  runId: run.id,
  step: run.step,
  toolCallId: 'c1',
  tenantId: run.tenantId,
  requestedBy: run.userId,
  toolName: 'send_invite',
  arguments: { name: 'Grace' },
  argsHash: 'a'.repeat(64),
  policyVersion: 1,
  summary: 'Invite Grace',
  risk: 'high',
  requiredRole: 'approver',
  status: 'pending',
  createdAt: iso(T0 + 2000),
  expiresAt: iso(T0 + 3_600_000),
  ...over,
});
