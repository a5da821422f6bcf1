import type {
  Approval,
  ChatMessage,
  Decision,
  Limits,
  LoopGuardState,
  RunPlan,
  RunReason,
  RunRecord,
  StepRecord,
  ToolCallRecord,
} from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';
import { TRANSFER_PREFIX } from '@rein/define/internal';
import type { Price } from '../../shared/config.js';
import { costOf } from '../budget/cost.js';
import { runEvent } from '../run/run-event.js';
import { type Charge, continueRun, finishRun, parkRun, waitRun } from '../run/run-transitions.js';
import { type ContextPolicy, observationContent } from './context-policy.js';
import { advanceGuard, checkRepeats, type EarlierCall, failingTool } from './loop-guard.js';
import { checkOutput, OUTPUT_REPAIR_TURNS, type OutputCheck, type OutputSpec, repairMessage } from './structured-output.js';

/**
 * The step's policy as pure functions: from what was read to what happens next. No
 * Redis, no clock, no model — the processor reads, calls, and applies the result.
 */

export interface GuardLimits {
  /** The N-th repeat of an identical call ends the run. */
  repeatLimit: number;
  /** N consecutive failures of one tool end the run. */
  toolFailureLimit: number;
  /** Longer tool results reach the model cut (the trace keeps them whole). */
  toolResultMaxChars: number;
}

/** How much of an observation a `tool.result` event carries; `GET /v1/runs/:id/trace` has all of it. */
export const EVENT_OBSERVATION_CHARS = 240;

export const observationPreview = (text: string) =>
  text.length <= EVENT_OBSERVATION_CHARS
    ? text
    : `${text.slice(0, EVENT_OBSERVATION_CHARS)}… (${text.length - EVENT_OBSERVATION_CHARS} more characters in the trace)`;

/** Smallest completion worth asking for; a call that cannot afford it is not made. */
export const MIN_COMPLETION_TOKENS = 16;

type Change = ReturnType<typeof continueRun>;

/** What a step does to its run: a value, applied in one place (commit, charge, metrics, log, enqueue). */
export type Transition =
  | { kind: 'continue'; change: Change; charge?: Charge; log?: LogLine }
  | { kind: 'park'; change: Change; charge?: Charge; newApprovals: Approval[]; log: LogLine }
  /** The step waits (status `waiting`) for the sub-agent runs it started. */
  | { kind: 'wait'; change: Change; charge?: Charge; children: string[]; log: LogLine }
  | { kind: 'finish'; change: Change; charge?: Charge; status: 'succeeded' | 'failed'; reason: RunReason; log: LogLine };

export interface LogLine {
  level: 'info' | 'warn';
  msg: string;
  fields?: Record<string, unknown>;
}

/** What a job finds when it looks at its run, before anything is decided. */
export type Gate =
  | { kind: 'skip' }
  | { kind: 'already_committed' }
  /** Still parked: the decision (or the expiry job) resumes it. */
  | { kind: 'parked' }
  | { kind: 'act'; decision: Decision }
  | { kind: 'decide' };

export function gate(
  run: RunRecord | null,
  jobStep: number,
  approvals: Approval[],
  decision: Decision | null,
  children: ReadonlyArray<Pick<RunRecord, 'status'> | null> = [],
): Gate {
  if (!run || TERMINAL_STATUSES.includes(run.status) || run.step < jobStep) return { kind: 'skip' };
  if (run.step > jobStep) return { kind: 'already_committed' };
  if (run.status === 'pending_approval' && approvals.some((a) => a.step === jobStep && a.status === 'pending')) return { kind: 'parked' };
  // A child that is gone (expired) has ended as far as its parent is concerned.
  if (run.status === 'waiting' && children.some((c) => c !== null && !TERMINAL_STATUSES.includes(c.status))) return { kind: 'parked' };
  return decision ? { kind: 'act', decision } : { kind: 'decide' };
}

export interface BudgetFacts {
  now: number;
  /** The tenant's daily quota is used up. */
  quotaExhausted: boolean;
  /** Why the step was being held back, if it was (`model_unavailable`). */
  waitingOn: string | null;
}

/** I6: limits are checked before the model is called, never after. */
export function exhaustedBudget(run: RunRecord, facts: BudgetFacts): RunReason | null {
  if (facts.now >= Date.parse(run.deadlineAt)) return deadlineReason(facts.waitingOn);
  if (run.step >= run.limits.maxSteps) return 'max_steps';
  if (run.usage.totalTokens >= run.limits.maxTokens) return 'token_budget';
  if (run.limits.maxCostUsd !== undefined && run.costUsd >= run.limits.maxCostUsd) return 'cost_budget';
  if (facts.quotaExhausted) return 'tenant_quota';
  return null;
}

/**
 * Why a run past its deadline failed: `model_unavailable` when its step was being held
 * back because no model could answer, `deadline` otherwise — the same answer whoever
 * notices first (a delayed step waking late, or the sweeper).
 */
export function deadlineReason(waitingOn: string | null): RunReason {
  return waitingOn === 'model_unavailable' ? 'model_unavailable' : 'deadline';
}

/** The completion's max_tokens: what the budget has left after the prompt, or null if not worth a call. */
export function completionRoom(run: RunRecord, maxCompletionTokens: number, promptEstimate: number): number | null {
  const left = run.limits.maxTokens - run.usage.totalTokens - promptEstimate;
  return left < MIN_COMPLETION_TOKENS ? null : Math.min(maxCompletionTokens, left);
}

/** The run fails before (or instead of) a step: budgets, input filter, a step that cannot progress. */
export function failRun(
  run: RunRecord,
  reason: RunReason,
  answer: string,
  mask: (text: string) => string,
  at: string,
  log: LogLine,
): Transition {
  return {
    kind: 'finish',
    status: 'failed',
    reason,
    change: finishRun(run, { status: 'failed', reason, finalAnswer: mask(answer) }, {}, {}, at),
    log,
  };
}

/** The run parks before its model call, asking a person for more budget (`onBudget: 'ask'`). */
export function askForBudget(run: RunRecord, approval: Approval, reason: RunReason, at: string): Transition {
  return {
    kind: 'park',
    newApprovals: [approval],
    change: parkRun(
      run,
      {},
      [approval.id],
      {
        approvals: [approval],
        events: [
          runEvent('approval.requested', run.id, run.step, {
            approvalId: approval.id,
            toolName: approval.toolName,
            summary: approval.summary,
            risk: approval.risk,
          }),
        ],
      },
      at,
    ),
    log: { level: 'info', msg: 'out of budget; asking for more', fields: { reason, approvalId: approval.id } },
  };
}

/** Everything a step's outcome depends on, once its decision is known. */
export interface StepFacts {
  run: RunRecord;
  decision: Decision;
  guard: LoopGuardState;
  limits: GuardLimits;
  prices: Record<string, Price>;
  mask: (text: string) => string;
  /** What the user is told when the run stops without an answer (the agent's hand-off). */
  handoff: string;
  now: number;
  /** How long the step took so far, its model call included. */
  durationMs: number;
  /** The agent's context policy: large results reach the model as summary + handle. */
  context?: ContextPolicy;
  /** The agent's declared answer shape, if any. */
  output?: OutputSpec;
  /** Another agent's limits, for a hand-off to it. */
  limitsOf?: (agent: string) => Limits | undefined;
}

/** The step's parts that do not depend on its tools. */
function parts(f: StepFacts) {
  const { run, decision } = f;
  const usage = { ...decision.usage, totalTokens: decision.usage.promptTokens + decision.usage.completionTokens };
  const costUsd = costOf(f.prices, decision.model, decision.usage);
  // A resumed step was charged when it parked (or waited for its children); it must not be charged again.
  const charged = run.status !== 'pending_approval' && run.status !== 'waiting';
  // Charged all the same (never less than the truth), but a tree's budget holds only if the cap does: its tree stops here.
  const overshot = decision.maxTokens !== undefined && decision.usage.completionTokens > decision.maxTokens;
  const spent: Partial<RunRecord> = charged
    ? {
        usage: {
          promptTokens: run.usage.promptTokens + usage.promptTokens,
          completionTokens: run.usage.completionTokens + usage.completionTokens,
          totalTokens: run.usage.totalTokens + usage.totalTokens,
        },
        costUsd: run.costUsd + costUsd,
        ...(overshot ? { overshot: true as const } : {}),
      }
    : {};
  const charge: Charge | undefined = charged
    ? { model: decision.model, ...decision.usage, costUsd, priced: Object.hasOwn(f.prices, decision.model) }
    : undefined;
  const at = new Date(f.now).toISOString();
  const toolCalls = decision.toolCalls.map((c) => ({
    id: c.id,
    type: 'function' as const,
    function: { name: c.name, arguments: c.arguments },
  }));
  const assistant: ChatMessage = { role: 'assistant', content: decision.content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
  const stepRecord = (records: ToolCallRecord[]): StepRecord => ({
    schemaVersion: 1,
    index: run.step,
    agent: run.agent,
    model: decision.model,
    thought: decision.toolCalls.length ? decision.content : null,
    toolCalls: records,
    usage,
    costUsd,
    durationMs: Math.round(f.durationMs),
    finishedAt: at,
  });
  const stepFinished = (outcome: string, more: Record<string, unknown> = {}) =>
    runEvent('step.finished', run.id, run.step, { outcome, thought: decision.content, usage, ...more });
  // Events announce results; the trace keeps them whole (storing them twice made a run's Redis footprint grow).
  const toolEvents = (records: ToolCallRecord[]) =>
    records.map((r) =>
      runEvent('tool.result', run.id, run.step, {
        toolCallId: r.id,
        name: r.name,
        arguments: r.arguments,
        outcome: r.outcome,
        observation: observationPreview(r.observation),
      }),
    );
  /** A loop breaker (or the deadline) ends the run after this step. */
  const stop = (reason: RunReason, records: ToolCallRecord[]): Transition => ({
    kind: 'finish',
    status: 'failed',
    reason,
    charge,
    change: finishRun(
      run,
      { status: 'failed', reason, finalAnswer: f.mask(f.handoff) },
      { ...spent, step: run.step + 1 },
      { step: stepRecord(records), events: [...toolEvents(records), stepFinished(reason)] },
      at,
    ),
    log: { level: 'warn', msg: 'run stopped after its step', fields: { reason } },
  });
  /** The model answered: the run ends with its answer (and, under an `output` schema, the parsed value or `output_invalid`). */
  const answer = (checked: OutputCheck | null): Transition => {
    const failed = checked?.ok === false;
    const ending = failed
      ? ({ status: 'failed', reason: 'output_invalid' } as const)
      : ({ status: 'succeeded', reason: 'completed' } as const);
    return {
      kind: 'finish',
      ...ending,
      charge,
      change: finishRun(
        run,
        { ...ending, finalAnswer: f.mask(decision.content ?? '') },
        { ...spent, step: run.step + 1, ...(checked?.ok ? { output: checked.value } : {}) },
        { step: stepRecord([]), messages: [assistant], events: [stepFinished('answered')] },
        at,
      ),
      log: failed
        ? { level: 'warn', msg: 'answer does not match the output schema after the repair turn', fields: { error: checked.error } }
        : { level: 'info', msg: 'run succeeded' },
    };
  };
  return { spent, charge, at, assistant, stepRecord, stepFinished, toolEvents, stop, answer };
}

/** The run with its step's reply paid for (as the step's commit will record it): what a child's limits are capped to. */
export const afterReply = (f: StepFacts): RunRecord => ({ ...f.run, ...parts(f).spent });

/** Whether the run's deadline passed (time parked for approval does not count, as in continueRun). */
function pastDeadline(f: StepFacts): boolean {
  const parkedFor = f.run.parkedAt ? f.now - Date.parse(f.run.parkedAt) : 0;
  return f.now >= Date.parse(f.run.deadlineAt) + parkedFor;
}

/** The records of calls a stop leaves unrun: each with why, none with a duration. */
function notRun(
  calls: Decision['toolCalls'],
  why: (call: Decision['toolCalls'][number]) => Pick<ToolCallRecord, 'outcome' | 'observation'>,
): ToolCallRecord[] {
  return calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments, durationMs: 0, ...why(c) }));
}

/** Before any tool runs: an answer ends the run, a looping call stops it; otherwise the tools run (read repeats from `earlier`). */
export function afterDecision(f: StepFacts): Transition | { kind: 'tools'; earlier: Map<number, EarlierCall> } {
  const { decision } = f;
  const p = parts(f);
  // A reply that came after the deadline (a model call nothing could cut) is charged, not acted on.
  if (pastDeadline(f)) {
    return p.stop(
      'deadline',
      notRun(decision.toolCalls, () => ({ outcome: 'rejected', observation: "Not executed: the run's deadline passed." })),
    );
  }
  if (decision.toolCalls.length === 0) return f.output ? afterAnswer(f, f.output, p) : p.answer(null);
  const repeats = checkRepeats(f.guard, decision.toolCalls, f.limits.repeatLimit);
  const looped = repeats.exhausted;
  if (looped) {
    return p.stop(
      'repeated_call',
      notRun(decision.toolCalls, (c) =>
        c === looped
          ? {
              outcome: 'repeated',
              observation: `Stopped: ${c.name} was asked for with the same arguments ${f.limits.repeatLimit + 1} times.`,
            }
          : { outcome: 'rejected', observation: 'Not executed: the run stopped.' },
      ),
    );
  }
  return { kind: 'tools', earlier: repeats.earlier };
}

/** A final answer under an `output` schema: parsed into `output`, or one repair turn (the error as feedback), then `output_invalid`. */
function afterAnswer(f: StepFacts, spec: OutputSpec, p: ReturnType<typeof parts>): Transition {
  const { run } = f;
  const checked = checkOutput(spec.schema, f.decision.content);
  const repairs = run.outputRepairs ?? 0;
  if (checked.ok || repairs >= OUTPUT_REPAIR_TURNS) return p.answer(checked);
  return {
    kind: 'continue',
    charge: p.charge,
    change: continueRun(
      run,
      { ...p.spent, outputRepairs: repairs + 1 },
      {
        step: p.stepRecord([]),
        messages: [p.assistant, { role: 'user', content: repairMessage(checked.error, spec) }],
        events: [p.stepFinished('output_repair')],
      },
      f.now,
    ),
    log: { level: 'warn', msg: 'answer does not match the output schema; one repair turn', fields: { error: checked.error } },
  };
}

/** After the tools: park for approvals, stop a failing tool, or go on to the next step. */
export function afterTools(f: StepFacts, records: ToolCallRecord[], newApprovals: Approval[]): Transition {
  const { run } = f;
  const p = parts(f);
  const waiting = records.filter((r) => r.outcome === 'awaiting_approval');
  if (waiting.length > 0) {
    const pendingIds = waiting.map((r) => r.approvalId as string);
    return {
      kind: 'park',
      charge: p.charge,
      newApprovals,
      change: parkRun(
        run,
        p.spent,
        pendingIds,
        {
          step: p.stepRecord(records),
          approvals: newApprovals,
          events: [
            ...p.toolEvents(records),
            ...newApprovals.map((a) =>
              runEvent('approval.requested', a.runId, a.step, { approvalId: a.id, toolName: a.toolName, summary: a.summary, risk: a.risk }),
            ),
            p.stepFinished('parked'),
          ],
        },
        p.at,
      ),
      log: { level: 'info', msg: 'run parked for approval', fields: { approvals: pendingIds } },
    };
  }
  const children = records.filter((r) => r.outcome === 'awaiting_child');
  if (children.length > 0) {
    const ids = children.map((r) => r.childRunId as string);
    return {
      kind: 'wait',
      charge: p.charge,
      children: ids,
      change: waitRun(
        run,
        p.spent,
        ids,
        { step: p.stepRecord(records), events: [...p.toolEvents(records), p.stepFinished('waiting')] },
        p.at,
      ),
      log: { level: 'info', msg: 'run waiting for its sub-agents', fields: { children: ids } },
    };
  }
  const guard = advanceGuard(f.guard, run.step, records);
  if (failingTool(guard, f.limits.toolFailureLimit)) return p.stop('tool_failures', records);
  const transfer = handedTo(records);
  const carriedOut = records.flatMap((r) => (r.planStep !== undefined && r.outcome === 'ok' ? [r.planStep] : []));
  const plan = run.plan && carriedOut.length ? { plan: { ...run.plan, done: [...run.plan.done, ...carriedOut] } } : {};
  const transferred = transfer ? { agent: transfer, limits: tighter(run.limits, f.limitsOf?.(transfer)) } : {};
  return {
    kind: 'continue',
    charge: p.charge,
    ...(transfer ? { log: { level: 'info' as const, msg: 'run handed off', fields: { from: run.agent, to: transfer } } } : {}),
    change: continueRun(
      run,
      { ...p.spent, guard, ...plan, ...transferred },
      {
        step: p.stepRecord(records),
        messages: [
          p.assistant,
          ...records.map(
            (r): ChatMessage => ({
              role: 'tool',
              tool_call_id: r.id,
              content: observationContent(r, run.step, f.limits.toolResultMaxChars, f.context),
            }),
          ),
        ],
        events: [
          ...p.toolEvents(records),
          transfer ? p.stepFinished('handed_off', { from: run.agent, to: transfer }) : p.stepFinished('continued'),
        ],
      },
      f.now,
    ),
  };
}

/** A replay that reached a call its original never had approved (`onNewApproval: 'stop'`) ends after this step. */
export function replayStopped(f: StepFacts, records: ToolCallRecord[]): Transition {
  return parts(f).stop('replay_stopped', records);
}

/** The agent a step's `transfer_to_<agent>` call handed the run to (the call plan lets one through per reply). */
function handedTo(records: readonly ToolCallRecord[]): string | undefined {
  const r = records.find((x) => x.outcome === 'ok' && x.name.startsWith(TRANSFER_PREFIX));
  return r?.name.slice(TRANSFER_PREFIX.length);
}

/** After a hand-off the run goes on under the tighter of both agents' limits (a caller's limits are never loosened). */
function tighter(current: Limits, target: Limits | undefined): Limits {
  if (!target) return current;
  const cost = [current.maxCostUsd, target.maxCostUsd].filter((c): c is number => c !== undefined);
  return {
    maxSteps: Math.min(current.maxSteps, target.maxSteps),
    maxTokens: Math.min(current.maxTokens, target.maxTokens),
    timeoutMs: Math.min(current.timeoutMs, target.timeoutMs),
    ...(cost.length ? { maxCostUsd: Math.min(...cost) } : {}),
  };
}

/** What a plan-mode run's planning step came to (engine/plan.ts decides which). */
export type PlanOutcome =
  /** The plan is invalid: the model gets one turn to repair it. */
  | { kind: 'repair'; problems: string[] }
  /** Still invalid after the repair turn: the run ends `plan_invalid`. */
  | { kind: 'invalid'; problems: string[] }
  /** The plan waits for its one approval. */
  | { kind: 'park'; plan: RunPlan; approval: Approval }
  /** Accepted, approved (maybe with edits) or rejected: the model is told, and the run goes on. */
  | { kind: 'proceed'; plan: RunPlan; note: string };

/** The planning step's transition: the plan's assistant message stays in the log, the runtime's answer follows it. */
export function afterPlan(f: StepFacts, outcome: PlanOutcome): Transition {
  const { run } = f;
  const p = parts(f);
  const step = p.stepRecord([]);
  // The plan as the model wrote it (tool calls, if it made any, are not part of a plan).
  const planned: ChatMessage = { role: 'assistant', content: f.decision.content };
  switch (outcome.kind) {
    case 'invalid':
      return {
        kind: 'finish',
        status: 'failed',
        reason: 'plan_invalid',
        charge: p.charge,
        change: finishRun(
          run,
          { status: 'failed', reason: 'plan_invalid', finalAnswer: f.mask(f.handoff) },
          { ...p.spent, step: run.step + 1 },
          { step, messages: [planned], events: [p.stepFinished('plan_invalid')] },
          p.at,
        ),
        log: { level: 'warn', msg: 'plan still invalid after its repair turn', fields: { problems: outcome.problems } },
      };
    case 'repair':
      return {
        kind: 'continue',
        charge: p.charge,
        change: continueRun(
          run,
          p.spent,
          {
            step,
            messages: [
              planned,
              { role: 'system', content: `Your plan is invalid: ${outcome.problems.join('; ')}. Reply with a corrected plan only.` },
            ],
            events: [p.stepFinished('plan_repair')],
          },
          f.now,
        ),
        log: { level: 'info', msg: 'plan invalid; one repair turn', fields: { problems: outcome.problems } },
      };
    case 'park': {
      const a = outcome.approval;
      return {
        kind: 'park',
        charge: p.charge,
        newApprovals: [a],
        change: parkRun(
          run,
          { ...p.spent, plan: outcome.plan },
          [a.id],
          {
            step,
            approvals: [a],
            events: [
              runEvent('approval.requested', a.runId, a.step, { approvalId: a.id, toolName: a.toolName, summary: a.summary, risk: a.risk }),
              p.stepFinished('parked'),
            ],
          },
          p.at,
        ),
        log: { level: 'info', msg: 'plan parked for approval', fields: { approvals: [a.id] } },
      };
    }
    case 'proceed':
      return {
        kind: 'continue',
        charge: p.charge,
        change: continueRun(
          run,
          { ...p.spent, plan: outcome.plan },
          { step, messages: [planned, { role: 'system', content: outcome.note }], events: [p.stepFinished(`plan_${outcome.plan.status}`)] },
          f.now,
        ),
        log: { level: 'info', msg: 'plan decided', fields: { status: outcome.plan.status } },
      };
  }
}
