import type { Principal } from '@rein/contract';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { compileOptions } from '../../src/shared/options.js';
import { createFakeModel, type FakeTurn, toolCall } from '../../src/testing/index.js';
import { type Harness, harnessPerTest, USER } from '../harness.js';
import { type RecordedRun, type RecordedStep, recordingText } from './recording.js';

/**
 * Records the runs of test/step/recorded/ on the real engine (Redis, the order assistant's
 * tools, a scripted model) and checks each against its committed recording, so that the
 * recordings replayed by recorded-runs.test.ts stay what the engine does. After a deliberate
 * change of behaviour, re-record them with
 *   npx vitest run packages/core/test/step/record-runs.int.test.ts --update
 * and read the diff of the JSON: it is the change.
 */

const NOW = Date.parse('2026-01-01T09:00:00.000Z');
const APPROVAL_TTL_MS = 60_000;
const { limits, tools } = compileOptions({});
const settings = {
  now: NOW,
  approvalTtlMs: APPROVAL_TTL_MS,
  guards: { repeatLimit: limits.repeatLimit, toolFailureLimit: tools.failureLimit, toolResultMaxChars: tools.resultMaxChars },
};
const APPROVER: Principal = { tenantId: 'acme', userId: 'bob', roles: ['approver'] };
const harness = harnessPerTest();

afterEach(() => {
  vi.useRealTimers();
});

/**
 * Runs `input` to its end with the model's `turns`, deciding each approval the run asks for
 * with `decide`, and returns every step as the engine applied it.
 */
async function record(
  n: number,
  turns: FakeTurn[],
  input: string,
  opts: { maxSteps?: number; decide?: (t: Harness, approvalId: string) => Promise<unknown> } = {},
): Promise<{ steps: RecordedStep[]; runId: string; t: Harness }> {
  // Event times, the demo shop's dates (its store takes Date.now when built): the recording's clock is the harness's.
  vi.useFakeTimers({ toFake: ['Date'], now: NOW });
  const t = harness(createFakeModel(turns), { now: () => NOW, approvalTtlMs: APPROVAL_TTL_MS });
  // A fixed run id and trace: approval ids, idempotency keys and the demo shop's refund ids follow from them.
  const runId = `00000000-0000-4000-8000-00000000000${n}`;
  const steps: RecordedStep[] = [];
  // The engine calls the applier it was given by this object: each step's commit passes here, read before it lands.
  const apply = t.applier.apply;
  t.applier.apply = async (from, outcome) => {
    if (outcome.kind === 'step') {
      const approvals = (await t.store.approvals(from.id)).filter((a) => a.step === from.step);
      steps.push({ run: from, approvals, decision: await t.journal.get(from.id, from.step), transition: outcome.transition });
    }
    return apply(from, outcome);
  };
  const traceparent = `00-${'1'.repeat(31)}${n}-${'2'.repeat(16)}-01`;
  await t.runs.submit(USER, { input, ...(opts.maxSteps ? { limits: { maxSteps: opts.maxSteps } } : {}) }, undefined, traceparent, {
    runId,
  });
  await t.drain();
  for (let parked = await pending(t, runId); parked; parked = await pending(t, runId)) {
    if (!opts.decide) throw new Error('the run asked for an approval nobody decides');
    await opts.decide(t, parked);
    await t.drain();
  }
  return { steps, runId, t };
}

const pending = async (t: Harness, runId: string) => (await t.store.approvals(runId)).find((a) => a.status === 'pending')?.id;

const expectRecording = (file: string, about: string, steps: RecordedStep[]) =>
  expect(recordingText({ about, settings, steps } satisfies RecordedRun)).toMatchFileSnapshot(`./recorded/${file}`);

const answer = (content: string): FakeTurn => ({ content });
const lookup: FakeTurn = { toolCalls: [toolCall('call_1', 'query_order', { orderNo: '2024001' })] };
const refund = (amount: number): FakeTurn => ({
  content: 'Refunding the late shipment.',
  toolCalls: [toolCall('call_1', 'submit_refund', { orderNo: '2024001', amount, reason: 'late shipment' })],
});

describe('recorded runs', () => {
  it('two steps: a lookup, then the answer', async () => {
    const { steps, runId, t } = await record(1, [lookup, answer('Order 2024001 has not shipped yet.')], 'Where is order 2024001?');
    expect((await t.store.require(runId)).status).toBe('succeeded');
    await expectRecording(
      'two-steps.json',
      'A read runs and its result goes to the model; the next reply answers and the run succeeds.',
      steps,
    );
  });

  it('a refund parked for approval, approved with a lower amount, then the answer', async () => {
    const edit = (t: Harness, id: string) =>
      t.approvals.decide(APPROVER, id, { kind: 'approve', arguments: { orderNo: '2024001', amount: 50, reason: 'late shipment' } });
    const { steps, runId, t } = await record(2, [refund(100), answer('Refunded 50.')], 'Refund order 2024001, it is late.', {
      decide: edit,
    });
    expect((await t.store.require(runId)).status).toBe('succeeded');
    await expectRecording(
      'approved-with-edit.json',
      'A write needing approval parks the step; approved with edited arguments, the resumed step runs the edited call and tells the model what changed; the next reply answers.',
      steps,
    );
  });

  it('a refund parked for approval and rejected, then the answer', async () => {
    const reject = (t: Harness, id: string) => t.approvals.decide(APPROVER, id, { kind: 'reject', reason: 'not eligible' });
    const { steps, runId, t } = await record(3, [refund(100), answer('A colleague will follow up.')], 'Refund order 2024001.', {
      decide: reject,
    });
    expect((await t.store.require(runId)).status).toBe('succeeded');
    await expectRecording(
      'rejected.json',
      'A write needing approval parks the step; rejected, the resumed step runs nothing and tells the model who rejected it and why; the next reply answers.',
      steps,
    );
  });

  it('over budget: its step limit reached before the model is asked again', async () => {
    const { steps, runId, t } = await record(4, [lookup, answer('never asked')], 'Where is order 2024001?', { maxSteps: 1 });
    expect((await t.store.require(runId)).reason).toBe('max_steps');
    await expectRecording(
      'over-budget.json',
      'A run limited to one step: the first step looks up, the second fails max_steps before its model call, with the hand-off answer.',
      steps,
    );
  });

  it('a malformed reply: arguments that are not JSON, and a tool the agent does not have', async () => {
    const malformed: FakeTurn = {
      toolCalls: [
        { id: 'call_1', name: 'query_order', arguments: '{"orderNo": 2024001' },
        { id: 'call_1', name: 'delete_order', arguments: '{"orderNo":"2024001"}' },
      ],
    };
    const { steps, runId, t } = await record(5, [malformed, answer('Please give me the order number again.')], 'Where is 2024001?');
    expect((await t.store.require(runId)).status).toBe('succeeded');
    await expectRecording(
      'malformed-reply.json',
      'A reply whose calls cannot run (arguments not JSON; a tool the agent lacks; two calls with one id) becomes observations the model reads, not a failed step; the next reply answers.',
      steps,
    );
  });
});
