import type { RunView } from '@rein/contract';

/** A run as the API shows it, for tests of what a door makes of one: a running run unless `over` says otherwise. */
export const runViewOf = (over: Partial<RunView> = {}): RunView =>
  ({
    id: 'r1',
    traceId: 't',
    status: 'running',
    agent: 'a',
    input: 'hi',
    step: 1,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    costUsd: 0,
    limits: {},
    metadata: {},
    pendingApprovals: [],
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:01.000Z',
    deadlineAt: '2025-01-01T01:00:00.000Z',
    ...over,
  }) as RunView;
