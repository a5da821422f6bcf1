import type { Approval, Decision, RunRecord, ToolCallRecord } from '@rein/contract';
import type { AgentProfile, Tool } from '@rein/define/internal';
import orderApp, { createOrderTools, type DemoStore, orderAssistant, PolicySearch } from '@rein/example-order-assistant';
import { budgetVerdict } from '../../src/policy/budget/budget-ask.js';
import { distinctCallIds } from '../../src/policy/step/call-identity.js';
import { type PlannedCall, planCalls, plannedRecord, transferRecord } from '../../src/policy/step/call-plan.js';
import { guardFromHistory } from '../../src/policy/step/loop-guard.js';
import {
  afterDecision,
  afterTools,
  askForBudget,
  exhaustedBudget,
  failRun,
  type GuardLimits,
  type StepFacts,
  type Transition,
} from '../../src/policy/step/step-policy.js';
import { createPiiMasker } from '../../src/shared/guards/pii-masker.js';
import { slice } from './support.js';

/**
 * A recorded run (test/step/recorded/*.json): each step as the engine saw it — the run it
 * read, the approvals of its step, the model's journaled reply (none: it ended before its
 * model call) — and the Transition it committed. The runs are the order assistant's
 * (examples/order-assistant) on the engine harness; record-runs.int.test.ts records them.
 */
export interface RecordedRun {
  about: string;
  settings: { now: number; approvalTtlMs: number; guards: GuardLimits };
  steps: RecordedStep[];
}

export interface RecordedStep {
  run: RunRecord;
  approvals: Approval[];
  decision: Decision | null;
  transition: Transition;
}

/** The order assistant's tools as its app builds them; the replay plans calls, it never runs one. */
const tools = new Map<string, Tool>(
  createOrderTools({ store: slice<DemoStore>('demo store', {}), policies: new PolicySearch() }).map((t) => [t.name, t]),
);
const profile: AgentProfile = orderAssistant;
const masker = createPiiMasker(orderApp.guards.pii);
const mask = (text: string) => masker.maskText(text);
const handoff = orderApp.handoffAnswer as string;

/**
 * A step's decision replayed through the pure policy alone (no Redis, no model, no tool): the
 * budget check before the model call, or the reply's conclusion — the calls planned, those
 * that ran given the result the recording holds for them, the rest decided here. `earlier`:
 * the steps recorded before it (a run that keeps no loop guard rebuilds it from them).
 */
export function replayRecordedStep(rec: RecordedRun, step: RecordedStep, earlier: readonly RecordedStep[]): Transition {
  const { run } = step;
  const { now, approvalTtlMs, guards } = rec.settings;
  const at = new Date(now).toISOString();
  if (!step.decision) {
    const exhausted = exhaustedBudget(run, { now, quotaExhausted: false, waitingOn: null });
    const verdict = budgetVerdict(run, step.approvals, exhausted, profile.onBudget === 'ask', now, approvalTtlMs);
    if (verdict.kind === 'ask') return askForBudget(run, verdict.approval, verdict.reason, at);
    if (verdict.kind !== 'fail') throw new Error(`step ${run.step} ended before its model call, but its budget was not exhausted`);
    return failRun(run, verdict.reason, handoff, mask, at, { level: 'info', msg: 'replayed' });
  }
  const decision = { ...step.decision, toolCalls: distinctCallIds(step.decision.toolCalls) };
  const committed = earlier.flatMap((s) => (s.transition.change.step && s.run.step < run.step ? [s.transition.change.step] : []));
  const facts: StepFacts = {
    run,
    decision,
    guard: run.guard ?? guardFromHistory(committed),
    limits: guards,
    prices: {},
    mask,
    handoff,
    now,
    durationMs: 0,
    ...(profile.context ? { context: profile.context } : {}),
  };
  const first = afterDecision(facts);
  if (first.kind !== 'tools') return first;
  const planned = planCalls({ run, profile, tools, calls: decision.toolCalls, approvals: step.approvals, now, approvalTtlMs });
  const ran = step.transition.change.step?.toolCalls ?? [];
  const records = planned.map((p) => recordOf(p, ran));
  return afterTools(
    facts,
    records,
    planned.flatMap((p) => (p.kind === 'await_approval' && p.newApproval ? [p.newApproval] : [])),
  );
}

/** A planned call's record: decided by the plan, or, for a call the plan ran, what its tool answered in the recording. */
function recordOf(p: PlannedCall, ran: readonly ToolCallRecord[]): ToolCallRecord {
  if (p.kind === 'refuse' || p.kind === 'await_approval') return plannedRecord(p);
  if (p.kind === 'transfer') return transferRecord(p);
  if (p.kind === 'spawn') throw new Error('the recorded runs start no sub-agent');
  const answered = ran.find((r) => r.id === p.call.id);
  if (!answered) throw new Error(`the recording has no result for ${p.call.id}, which the plan runs`);
  // The tool's own answer: what the recorded observation says after the prefix the plan adds (an edited approval's).
  const prefix = p.resultPrefix ?? '';
  if (!answered.observation.startsWith(prefix)) throw new Error(`the recorded result of ${p.call.id} lacks the plan's prefix "${prefix}"`);
  const { outcome, observation } = answered;
  return { id: p.call.id, name: p.call.name, arguments: p.args, outcome, observation, durationMs: 0, ...p.extra };
}

/** What a step decided: its Transition without the log line it is applied with (logging is not deciding). */
export const decided = (t: Transition) => {
  const { log: _log, ...rest } = t;
  return rest;
};

/**
 * A recording as it is committed: timings (wall-clock durations) zeroed, and laid out as the
 * repository's formatter lays out JSON (objects open, short lists of plain values on one line).
 */
export function recordingText(rec: RecordedRun): string {
  const zeroed = JSON.parse(JSON.stringify(rec, (key, value) => (key === 'durationMs' ? 0 : value)));
  return `${layout(zeroed, '', 0)}\n`;
}

const LINE_WIDTH = 140;

function layout(value: unknown, indent: string, taken: number): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const plain = value.every((v) => v === null || typeof v !== 'object' || (Array.isArray(v) && v.every((w) => typeof w !== 'object')));
    const flat = `[${value.map(inlineArray).join(', ')}]`;
    if (plain && taken + flat.length + 1 <= LINE_WIDTH) return flat;
    return `[\n${value.map((v) => `${inner}${layout(v, inner, inner.length)}`).join(',\n')}\n${indent}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  return `{\n${entries
    .map(([k, v]) => {
      const key = `${JSON.stringify(k)}: `;
      return `${inner}${key}${layout(v, inner, inner.length + key.length)}`;
    })
    .join(',\n')}\n${indent}}`;
}

const inlineArray = (v: unknown): string => (Array.isArray(v) ? `[${v.map((w) => JSON.stringify(w)).join(', ')}]` : JSON.stringify(v));
