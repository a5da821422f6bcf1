import type { RunRecord } from '@rein/contract';
import { defineAgent, defineApp, defineTool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { planCalls } from '../src/policy/step/call-plan.js';
import { boundedByTree, childLimits, childObservation, childRecord, childRunId, treeTotal } from '../src/policy/step/sub-agents.js';
import { toolCall } from '../src/testing/index.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  id: 'parent',
  traceId: '0'.repeat(32),
  tenantId: 't',
  userId: 'u',
  roles: ['user'],
  agent: 'triage',
  input: 'hi',
  metadata: {},
  limits: { maxSteps: 10, maxTokens: 1000, timeoutMs: 60_000 },
  status: 'running',
  step: 2,
  usage: { promptTokens: 300, completionTokens: 100, totalTokens: 400 },
  costUsd: 0,
  pendingApprovals: [],
  version: 3,
  createdAt: new Date(NOW).toISOString(),
  updatedAt: new Date(NOW).toISOString(),
  deadlineAt: new Date(NOW + 30_000).toISOString(),
  ...over,
});
const triage = defineAgent({ name: 'triage', instructions: 'triage', tools: [], agents: ['worker'], handoffs: ['worker'] });

describe('a child run (pure)', () => {
  it('gets the same id for the same parent, step and call, and a different one otherwise', () => {
    expect(childRunId('p', 1, 'c')).toBe(childRunId('p', 1, 'c'));
    expect(new Set([childRunId('p', 1, 'c'), childRunId('p', 2, 'c'), childRunId('p', 1, 'd'), childRunId('q', 1, 'c')]).size).toBe(4);
    // Shaped like a run id: no separator of approval or job ids.
    expect(childRunId('p', 1, 'c')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('is capped to what the parent has left, inherits its identity and trace, and knows its place in the tree', () => {
    const parent = run({
      ancestors: ['root'],
      rootRunId: 'root',
      parentRunId: 'root',
      limits: { maxSteps: 10, maxTokens: 1000, timeoutMs: 60_000, maxCostUsd: 1 },
      costUsd: 0.75,
    });
    const limits = childLimits(parent, { maxSteps: 5, maxTokens: 50_000, timeoutMs: 300_000 }, NOW);
    expect(limits).toEqual({ maxSteps: 5, maxTokens: 600, timeoutMs: 30_000, maxCostUsd: 0.25 });
    const child = childRecord(parent, { id: 'kid', agent: 'worker', input: 'do it', limits }, NOW);
    expect(child).toMatchObject({
      tenantId: 't',
      userId: 'u',
      roles: ['user'],
      traceId: parent.traceId,
      parentRunId: 'parent',
      parentStep: 2,
      rootRunId: 'root',
      ancestors: ['root', 'parent'],
      status: 'queued',
      deadlineAt: parent.deadlineAt,
    });
  });

  it("runs a child on its parent's app version; the child's own agent says whether it upgrades", () => {
    const limits = { maxSteps: 5, maxTokens: 100, timeoutMs: 30_000 };
    const parent = run({ appVersion: 'v1' });
    const pinned = childRecord(parent, { id: 'kid', agent: 'worker', input: 'do it', limits }, NOW);
    expect(pinned.appVersion).toBe('v1');
    expect(pinned.versioning).toBeUndefined();
    const upgrading = childRecord(parent, { id: 'kid', agent: 'worker', input: 'do it', limits, versioning: 'upgrade' }, NOW);
    expect(upgrading).toMatchObject({ appVersion: 'v1', versioning: 'upgrade' });
    expect(childRecord(run(), { id: 'kid', agent: 'worker', input: 'do it', limits }, NOW).appVersion).toBeUndefined();
  });

  it('tells the parent its output, its answer, or subagent_failed with the reason', () => {
    expect(childObservation(run({ status: 'succeeded', finalAnswer: 'done' }))).toEqual({ outcome: 'ok', observation: 'done' });
    expect(childObservation(run({ status: 'succeeded', finalAnswer: '{}', output: { a: 1 } }))).toEqual({
      outcome: 'ok',
      observation: '{"a":1}',
    });
    expect(childObservation(run({ status: 'cancelled', reason: 'cancelled' }))).toEqual({
      outcome: 'error',
      observation: '{"error":"subagent_failed","reason":"cancelled"}',
    });
    expect(JSON.parse(childObservation(null).observation)).toEqual({ error: 'subagent_failed', reason: 'not_found' });
  });
});

describe('one budget for the tree (pure)', () => {
  it("lowers a run's token and cost limits to what every bound of its tree has left", () => {
    const child = run({
      id: 'kid',
      usage: { promptTokens: 100, completionTokens: 0, totalTokens: 100 },
      limits: { maxSteps: 5, maxTokens: 600, timeoutMs: 10_000 },
    });
    const parentSpent = treeTotal(run(), [{ promptTokens: 400, completionTokens: 0, totalTokens: 400, costUsd: 0.1 }]);
    expect(parentSpent.totalTokens).toBe(800);
    const bounded = boundedByTree(child, [
      { limits: { maxSteps: 10, maxTokens: 1000, timeoutMs: 60_000, maxCostUsd: 0.5 }, spent: parentSpent },
    ]);
    expect(bounded.limits.maxTokens).toBe(300); // its 100 + the parent's 200 left
    expect(bounded.limits.maxCostUsd).toBeCloseTo(0.4);
    const spentOut = boundedByTree(child, [{ limits: { maxSteps: 10, maxTokens: 700, timeoutMs: 60_000 }, spent: parentSpent }]);
    expect(spentOut.limits.maxTokens).toBe(child.usage.totalTokens);
    expect(boundedByTree(child, [])).toBe(child);
  });
});

describe('the call plan of sub-agents and hand-offs (pure)', () => {
  const plan = (calls: ReturnType<typeof toolCall>[], over: Partial<RunRecord> = {}, limits = { maxDepth: 3, maxChildrenPerStep: 2 }) =>
    planCalls({
      run: run(over),
      profile: triage,
      tools: new Map(),
      calls,
      approvals: [],
      now: NOW,
      approvalTtlMs: 1000,
      delegation: limits,
    });

  it('spawns call_<agent> with a deterministic child id, refuses beyond the step limit and the depth limit', () => {
    const planned = plan([1, 2, 3].map((i) => toolCall(`c${i}`, 'call_worker', { input: `q${i}` })));
    expect(planned.map((p) => p.kind)).toEqual(['spawn', 'spawn', 'refuse']);
    expect(planned[0]).toMatchObject({ agent: 'worker', input: 'q1', childId: childRunId('parent', 2, 'c1') });
    const deep = plan([toolCall('c', 'call_worker', { input: 'q' })], { ancestors: ['a', 'b', 'c'] });
    expect(deep[0]).toMatchObject({ kind: 'refuse', outcome: 'forbidden' });
    expect(plan([toolCall('c', 'call_worker', { nope: 1 })])[0]).toMatchObject({ kind: 'refuse', outcome: 'invalid_arguments' });
  });

  it('lets one transfer_to_<agent> through per reply; an agent not listed is an unknown tool', () => {
    const planned = plan([
      toolCall('h1', 'transfer_to_worker', { reason: 'refund' }),
      toolCall('h2', 'transfer_to_worker', {}),
      toolCall('x', 'call_other', { input: 'q' }),
    ]);
    expect(planned.map((p) => p.kind)).toEqual(['transfer', 'refuse', 'refuse']);
    expect(planned[2]).toMatchObject({ outcome: 'unknown_tool' });
  });
});

describe('defineApp checks how agents use each other', () => {
  const tools = [defineTool({ name: 'noop', description: 'noop', kind: 'read', parameters: z.object({}), execute: () => 'ok' })];
  const agent = (name: string, more: { agents?: string[]; handoffs?: string[] } = {}) =>
    defineAgent({ name, instructions: name, tools: ['noop'], ...more });

  it('refuses unknown sub-agents and hand-offs, circles of calls, itself, and tools named like delegation', () => {
    expect(() => defineApp({ agents: [agent('a', { agents: ['ghost'] })], tools })).toThrow(/sub-agent "ghost"/);
    expect(() => defineApp({ agents: [agent('a', { handoffs: ['ghost'] })], tools })).toThrow(/hand-off "ghost"/);
    expect(() =>
      defineApp({ agents: [agent('a', { agents: ['b'] }), agent('b', { agents: ['c'] }), agent('c', { agents: ['a'] })], tools }),
    ).toThrow(/circle: a → b → c → a/);
    expect(() => agent('a', { agents: ['a'] })).toThrow(/names the agent itself/);
    const named = defineTool({ name: 'call_x', description: 'x', kind: 'read', parameters: z.object({}), execute: () => 'ok' });
    expect(() => defineApp({ agents: [agent('a')], tools: [...tools, named] })).toThrow(/form of a sub-agent call/);
    // Hand-offs may go round: one run, bounded by its steps.
    expect(() => defineApp({ agents: [agent('a', { handoffs: ['b'] }), agent('b', { handoffs: ['a'] })], tools })).not.toThrow();
  });
});
