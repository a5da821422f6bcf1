import type { Approval, RunRecord, StepRecord, ToolCallRecord } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import {
  changeFacts,
  commitFacts,
  deciderLabels,
  finishFact,
  knownToolNames,
  metSla,
  recordFacts,
} from '../src/policy/step/commit-facts.js';
import type { Transition } from '../src/policy/step/step-policy.js';

/** What a committed step counts, read from its records (pure: no Redis, no registry). */

const call = (name: string, outcome: ToolCallRecord['outcome'], extra: Partial<ToolCallRecord> = {}): ToolCallRecord => ({
  id: `${name}-${outcome}`,
  name,
  arguments: {},
  outcome,
  observation: '',
  durationMs: 0,
  ...extra,
});

const step = (toolCalls: ToolCallRecord[]): StepRecord => ({
  schemaVersion: 1,
  index: 0,
  model: 'm',
  thought: null,
  toolCalls,
  usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
  costUsd: 0,
  durationMs: 0,
  finishedAt: '2026-01-01T00:00:00.000Z',
});

const known = (name: string) => name !== 'made_up';

describe('recordFacts', () => {
  it('counts each call by outcome, a reused read as snapshot and an unregistered name as unknown', () => {
    const facts = recordFacts(
      step([call('query_order', 'ok'), call('query_order', 'ok', { fromSnapshot: true }), call('made_up', 'unknown_tool')]),
      known,
    );
    expect(facts.toolCalls).toEqual([
      { tool: 'query_order', outcome: 'ok' },
      { tool: 'query_order', outcome: 'snapshot' },
      { tool: 'unknown', outcome: 'unknown_tool' },
    ]);
    expect(facts.effectsUncertain).toEqual([]);
  });

  it('counts an uncertain effect once per call', () => {
    expect(recordFacts(step([call('charge_card', 'uncertain'), call('charge_card', 'ok')]), known).effectsUncertain).toEqual([
      'charge_card',
    ]);
  });

  it("counts a sub-agent's or hand-off's tool by its name when it names one of the app's agents", () => {
    const fleet = knownToolNames(new Set(['query_order']), new Set(['refunds']));
    const facts = recordFacts(
      step([
        call('call_refunds', 'awaiting_child'),
        call('transfer_to_refunds', 'ok'),
        call('call_nobody', 'unknown_tool'),
        call('transfer_to_', 'unknown_tool'),
      ]),
      fleet,
    );
    expect(facts.toolCalls.map((f) => f.tool)).toEqual(['call_refunds', 'transfer_to_refunds', 'unknown', 'unknown']);
  });

  it('counts nothing for a change without a step record', () => {
    expect(recordFacts(undefined, known)).toEqual({ toolCalls: [], effectsUncertain: [] });
  });
});

describe('commitFacts', () => {
  it("counts a park's new approvals, and no approval for other kinds", () => {
    const approval = { toolName: 'create_ticket', risk: 'high' } as Approval;
    const change = { step: step([call('create_ticket', 'awaiting_approval')]) } as Transition['change'];
    const park = { kind: 'park', change, newApprovals: [approval], log: { level: 'info', msg: '' } } as Transition;
    expect(commitFacts(park, known)).toEqual({
      toolCalls: [{ tool: 'create_ticket', outcome: 'awaiting_approval' }],
      effectsUncertain: [],
      approvalsCreated: [{ tool: 'create_ticket', risk: 'high' }],
      approvalsDecided: [],
    });
    expect(commitFacts({ kind: 'continue', change } as Transition, known).approvalsCreated).toEqual([]);
  });
});

describe('changeFacts', () => {
  const createdAt = '2026-01-01T00:00:00.000Z';
  const approval = {
    toolName: 'submit_refund',
    risk: 'high',
    status: 'approved',
    createdAt,
    tenantId: 't1',
    decidedBy: 'lisi',
  } as Approval;
  const now = Date.parse(createdAt) + 90_000;

  it("counts a decision's approvals with how long they waited, and a saga plan's approval as created", () => {
    expect(changeFacts('decide', [approval], now)).toEqual({
      toolCalls: [],
      effectsUncertain: [],
      approvalsCreated: [],
      approvalsDecided: [
        { tool: 'submit_refund', risk: 'high', decision: 'approved', waitedMs: 90_000, tenantId: 't1', decidedBy: 'lisi' },
      ],
    });
    expect(changeFacts('compensate', [{ ...approval, status: 'pending' }], now).approvalsCreated).toEqual([
      { tool: 'submit_refund', risk: 'high' },
    ]);
  });

  it('names no decider for an expiry, and counts only a decision a person made in time as within the SLA', () => {
    const [expired] = changeFacts('decide', [{ ...approval, status: 'expired', decidedBy: undefined }], now).approvalsDecided;
    expect(expired).toEqual({ tool: 'submit_refund', risk: 'high', decision: 'expired', waitedMs: 90_000, tenantId: 't1' });
    expect(metSla({ decision: 'expired', waitedMs: 1 }, 60_000)).toBe(false);
    expect(metSla({ decision: 'rejected', waitedMs: 60_000 }, 60_000)).toBe(true);
    expect(metSla({ decision: 'approved', waitedMs: 60_001 }, 60_000)).toBe(false);
  });

  it('labels a decider by user id only when a static key names them in that tenant (a bounded list)', () => {
    const label = deciderLabels([{ tenantId: 't1', userId: 'lisi' }]);
    expect(label('t1', 'lisi')).toBe('lisi');
    // Another tenant's user of that name, and anyone from company sign-in: one label, however many there are.
    expect(label('t2', 'lisi')).toBe('company');
    expect(new Set(Array.from({ length: 1000 }, (_, i) => label('t1', `oidc-user-${i}`)))).toEqual(new Set(['company']));
  });

  it("does not count a cancel's withdrawn approvals as decisions", () => {
    const facts = changeFacts('cancel', [{ ...approval, status: 'withdrawn' }], now);
    expect(facts.approvalsDecided).toEqual([]);
    expect(facts.approvalsCreated).toEqual([]);
  });
});

describe('finishFact', () => {
  const run = (status: RunRecord['status'], reason?: RunRecord['reason']) => ({ agent: 'a', status, reason }) as RunRecord;

  it('names the finish of the commit that finished the run, from the committed record', () => {
    expect(finishFact(run('running'), run('cancelled', 'cancelled'))).toEqual({ agent: 'a', status: 'cancelled', reason: 'cancelled' });
  });

  it('names none for a live run, nor for a commit on a run already finished (a saga plan)', () => {
    expect(finishFact(run('queued'), run('running'))).toBeUndefined();
    expect(finishFact(run('failed', 'max_steps'), run('failed', 'max_steps'))).toBeUndefined();
  });
});
