import type { Decision, RunRecord, ToolCallRecord } from '@rein/contract';
import { pino } from 'pino';
import { EMPTY_GUARD } from '../../src/policy/step/loop-guard.js';
import type { StepFacts } from '../../src/policy/step/step-policy.js';
import type { Outcome, TransitionApplier } from '../../src/step/apply-transition.js';
import { stepClock } from '../../src/step/step-deps.js';

/**
 * What the phase tests share (test/step/<phase>.test.ts): a step context (a run, its
 * journaled reply, the facts its conclusion reads) and in-memory stand-ins for the slice of
 * dependencies a phase takes. No Redis, no model, no clock but `NOW`.
 */

export const NOW = Date.parse('2026-01-01T00:00:10.000Z');

export const clock = stepClock(() => NOW);

export const silentLogger = pino({ level: 'silent' });

export const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  id: 'r1',
  traceId: '0'.repeat(32),
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user'],
  agent: 'order-assistant',
  input: 'hello',
  metadata: {},
  limits: { maxSteps: 8, maxTokens: 10_000, timeoutMs: 60_000 },
  status: 'running',
  step: 2,
  usage: { promptTokens: 200, completionTokens: 20, totalTokens: 220 },
  costUsd: 0,
  pendingApprovals: [],
  version: 5,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  deadlineAt: '2026-01-01T00:01:00.000Z',
  ...over,
});

export const decision = (over: Partial<Decision> = {}): Decision => ({
  schemaVersion: 1,
  step: 2,
  model: 'm',
  content: 'thinking',
  toolCalls: [{ id: 'c1', name: 'search_policy', arguments: '{"query":"refund"}' }],
  usage: { promptTokens: 100, completionTokens: 10 },
  durationMs: 3,
  createdAt: '2026-01-01T00:00:09.000Z',
  ...over,
});

export const facts = (over: Partial<StepFacts> = {}): StepFacts => ({
  run: run(),
  decision: decision(),
  guard: EMPTY_GUARD,
  limits: { repeatLimit: 2, toolFailureLimit: 3, toolResultMaxChars: 2000 },
  prices: { m: { promptPerMTok: 1_000_000, completionPerMTok: 2_000_000 } },
  mask: (text) => text.replace(/\d{11}/g, '***'),
  handoff: 'handed to a person',
  now: NOW,
  durationMs: 7,
  ...over,
});

export const record = (over: Partial<ToolCallRecord> = {}): ToolCallRecord => ({
  id: 'c1',
  name: 'search_policy',
  arguments: { query: 'refund' },
  outcome: 'ok',
  observation: 'policy text',
  durationMs: 1,
  ...over,
});

/**
 * A dependency as a phase may use it: only the members given. Touching any other one throws,
 * naming it, so a test shows (and keeps) the slice its phase really takes.
 */
export function slice<T extends object>(name: string, given: Partial<T>): T {
  return new Proxy(given, {
    get(target, key, receiver) {
      if (typeof key === 'symbol' || key === 'then' || key in target) return Reflect.get(target, key, receiver);
      throw new Error(`${name}.${key} is outside the phase's slice`);
    },
  }) as T;
}

/** The applier as the phases see it: every outcome handed to it, each committed as the run its change leads to. */
export function recordingApplier(over: Partial<TransitionApplier> = {}) {
  const applied: Array<{ from: RunRecord; outcome: Outcome }> = [];
  const applier = slice<TransitionApplier>('applier', {
    async apply(from, outcome) {
      applied.push({ from, outcome });
      const change = outcome.kind === 'step' ? outcome.transition.change : outcome.change;
      return { ...change.to, version: from.version + 1 };
    },
    ...over,
  });
  return { applier, applied };
}
