import type { Decision, RunRecord } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EMPTY_GUARD } from '../src/policy/step/loop-guard.js';
import { afterDecision, type StepFacts } from '../src/policy/step/step-policy.js';
import { outputSpec } from '../src/policy/step/structured-output.js';

/** The output schema in the step policy: pure, no Redis, no model. */

const NOW = Date.parse('2026-01-01T00:00:10.000Z');
const spec = outputSpec('classifier', z.object({ category: z.enum(['question', 'complaint']), confidence: z.number().max(1) }));

const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  id: 'r1',
  traceId: '0'.repeat(32),
  tenantId: 'acme',
  userId: 'alice',
  roles: ['user'],
  agent: 'classifier',
  input: 'hello',
  metadata: {},
  limits: { maxSteps: 8, maxTokens: 10_000, timeoutMs: 60_000 },
  status: 'running',
  step: 0,
  usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  costUsd: 0,
  pendingApprovals: [],
  version: 1,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  deadlineAt: '2026-01-01T00:01:00.000Z',
  ...over,
});

const answer = (content: string, step = 0): Decision => ({
  schemaVersion: 1,
  step,
  model: 'm',
  content,
  toolCalls: [],
  usage: { promptTokens: 100, completionTokens: 10 },
  durationMs: 3,
  createdAt: '2026-01-01T00:00:09.000Z',
});

const facts = (over: Partial<StepFacts>): StepFacts => ({
  run: run(),
  decision: answer('{}'),
  guard: EMPTY_GUARD,
  limits: { repeatLimit: 2, toolFailureLimit: 3, toolResultMaxChars: 2000 },
  prices: {},
  mask: (text) => text,
  handoff: 'handed to a person',
  now: NOW,
  durationMs: 7,
  output: spec,
  ...over,
});

describe('structured output in the step policy', () => {
  it('turns the JSON schema of a zod schema into response_format json_schema', () => {
    expect(spec.jsonSchema).toMatchObject({
      name: 'classifier_output',
      schema: { type: 'object', properties: { category: { enum: ['question', 'complaint'] } }, required: ['category', 'confidence'] },
    });
    expect(spec.jsonSchema.schema).not.toHaveProperty('$schema');
  });

  it('finishes with the parsed value as `output` next to the text answer', () => {
    const t = afterDecision(facts({ decision: answer('{"category":"question","confidence":0.9}') }));
    expect(t).toMatchObject({ kind: 'finish', status: 'succeeded', reason: 'completed' });
    if (t.kind !== 'finish') throw new Error('unreachable');
    expect(t.change.to).toMatchObject({
      output: { category: 'question', confidence: 0.9 },
      finalAnswer: '{"category":"question","confidence":0.9}',
    });
  });

  it('gives an invalid answer one repair turn with the validation error as feedback, then ends output_invalid', () => {
    const first = afterDecision(facts({ decision: answer('{"category":"praise","confidence":2}') }));
    expect(first.kind).toBe('continue');
    if (first.kind !== 'continue') throw new Error('unreachable');
    expect(first.change.to).toMatchObject({ step: 1, outputRepairs: 1 });
    expect(first.change.to.output).toBeUndefined();
    const feedback = first.change.messages?.at(-1);
    expect(feedback).toMatchObject({ role: 'user' });
    expect(feedback?.content).toMatch(/category/);
    expect(feedback?.content).toMatch(/confidence/);

    const second = afterDecision(facts({ run: { ...first.change.to, version: 2 }, decision: answer('not json at all', 1) }));
    expect(second).toMatchObject({ kind: 'finish', status: 'failed', reason: 'output_invalid' });
    if (second.kind !== 'finish') throw new Error('unreachable');
    expect(second.change.to).toMatchObject({ status: 'failed', reason: 'output_invalid', finalAnswer: 'not json at all', step: 2 });
    expect(second.change.to.output).toBeUndefined();
  });

  it('leaves agents without an output schema as they were: any text is the answer', () => {
    const t = afterDecision(facts({ output: undefined, decision: answer('just words') }));
    expect(t).toMatchObject({ kind: 'finish', status: 'succeeded', reason: 'completed' });
    if (t.kind !== 'finish') throw new Error('unreachable');
    expect(t.change.to.output).toBeUndefined();
  });
});
