import type { Approval, RunRecord, RunStatus, StepRecord } from '@rein/contract';
import type { ArchiveDoc } from '../src/adapters/postgres/run-archive.js';
import { revisionOf } from '../src/adapters/redis/hot-runs.js';

export interface FixtureRun {
  id: string;
  tenantId?: string;
  userId?: string;
  agent?: string;
  status?: RunStatus;
  input?: string;
  finalAnswer?: string;
  createdAt?: string;
  durationMs?: number;
  /** Per step: its model and usage. */
  steps?: Array<{ model: string; promptTokens: number; completionTokens: number; costUsd: number }>;
}

/** A finished run as Redis holds it: document, steps with tool calls, an approval, compensation and events. */
export function archiveDoc(f: FixtureRun): ArchiveDoc {
  const tenantId = f.tenantId ?? 'acme';
  const createdAt = f.createdAt ?? '2026-11-02T08:00:00.000Z';
  const finishedAt = new Date(Date.parse(createdAt) + (f.durationMs ?? 4_000)).toISOString();
  const stepSpecs = f.steps ?? [{ model: 'gpt-4o-mini', promptTokens: 100, completionTokens: 20, costUsd: 0.001 }];
  const steps: StepRecord[] = stepSpecs.map((s, index) => ({
    schemaVersion: 1,
    index,
    model: s.model,
    thought: index === 0 ? '查询订单' : null,
    toolCalls:
      index === 0
        ? [
            {
              id: `call-${index}-a`,
              name: 'lookup_order',
              arguments: { orderId: '2024001', note: '张三' },
              outcome: 'ok',
              observation: '{"status":"shipped"}',
              durationMs: 12,
            },
            {
              id: `call-${index}-b`,
              name: 'refund',
              arguments: { orderId: '2024001', amount: 5 },
              outcome: 'ok',
              observation: 'refunded',
              durationMs: 30.5,
              approvalId: `${f.id}.${index}.0`,
              planStep: 1,
            },
          ]
        : [],
    usage: { promptTokens: s.promptTokens, completionTokens: s.completionTokens, totalTokens: s.promptTokens + s.completionTokens },
    costUsd: s.costUsd,
    durationMs: 800,
    finishedAt,
  }));
  const sum = (k: 'promptTokens' | 'completionTokens') => stepSpecs.reduce((n, s) => n + s[k], 0);
  const approval: Approval = {
    schemaVersion: 1,
    id: `${f.id}.0.0`,
    runId: f.id,
    step: 0,
    toolCallId: 'call-0-b',
    tenantId,
    requestedBy: f.userId ?? 'alice',
    toolName: 'refund',
    arguments: { orderId: '2024001', amount: 5 },
    argsHash: 'a'.repeat(64),
    policyVersion: 1,
    summary: 'refund 5',
    risk: 'high',
    requiredRole: 'approver',
    status: 'approved',
    createdAt,
    expiresAt: finishedAt,
    decidedBy: 'bob',
    decidedAt: finishedAt,
  };
  const run: RunRecord = {
    schemaVersion: 1,
    id: f.id,
    traceId: '0af7651916cd43dd8448eb211c80319c',
    tenantId,
    userId: f.userId ?? 'alice',
    roles: ['user'],
    agent: f.agent ?? 'order-assistant',
    input: f.input ?? '帮我查一下张三的订单 2024001',
    metadata: { channel: 'web' },
    limits: { maxSteps: 10, maxTokens: 10_000, timeoutMs: 60_000 },
    status: f.status ?? 'succeeded',
    reason: f.status === 'failed' ? 'tool_failures' : 'completed',
    ...(f.finalAnswer !== undefined ? { finalAnswer: f.finalAnswer } : { finalAnswer: 'Order 2024001 was shipped and refunded.' }),
    step: steps.length,
    usage: {
      promptTokens: sum('promptTokens'),
      completionTokens: sum('completionTokens'),
      totalTokens: sum('promptTokens') + sum('completionTokens'),
    },
    costUsd: stepSpecs.reduce((n, s) => n + s.costUsd, 0),
    pendingApprovals: [],
    version: 3,
    createdAt,
    updatedAt: finishedAt,
    deadlineAt: new Date(Date.parse(createdAt) + 60_000).toISOString(),
  };
  const ms = Date.parse(createdAt);
  const doc: Omit<ArchiveDoc, 'revision'> = {
    run,
    steps,
    approvals: [approval],
    compensation: null,
    events: [
      {
        id: `${ms}-0`,
        event: { type: 'run.queued', runId: f.id, step: 0, at: createdAt, data: { agent: run.agent, traceId: run.traceId } },
      },
      { id: `${ms + 5}-0`, event: { type: 'step.started', runId: f.id, step: 0, at: createdAt, data: {} } },
      {
        id: `${ms + 5}-1`,
        event: { type: 'tool.result', runId: f.id, step: 0, at: createdAt, data: { name: 'lookup_order', outcome: 'ok' } },
      },
      { id: `${ms + 900}-0`, event: { type: 'run.finished', runId: f.id, step: 1, at: finishedAt, data: { status: run.status } } },
    ],
  };
  return { ...doc, revision: revisionOf(doc) };
}
