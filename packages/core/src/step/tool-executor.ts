import type { Approval, Effect, ModelToolCall, ToolCallRecord } from '@rein/contract';
import { type EffectHandle, type InputReply, resultText, type Tool, ToolNeedsInputError, toolDependency } from '@rein/define/internal';
import type { Bulkhead } from '../adapters/resilience/bulkhead.js';
import type { CircuitBreakers, FleetBreakerState } from '../adapters/resilience/circuit-breakers.js';
import { type CaptureContent, toolSpan } from '../adapters/tracing/genai.js';
import { REIN_ATTR } from '../adapters/tracing/rein-spans.js';
import { annotateActiveSpan } from '../adapters/tracing/spans.js';
import type { EffectLedger } from '../policy/ports/effect-ledger.js';
import { type CallContext, type PlannedCall, plannedRecord } from '../policy/step/call-plan.js';
import { errorObservation } from '../policy/step/tool-observation.js';
import { capToolResult } from '../policy/step/tool-result-cap.js';
import { DEFAULT_MAX_TOOL_RESULT_BYTES } from '../shared/config.js';
import { BreakerOpenError, BulkheadFullError, ToolCallCutError, ToolOutcomeUnknownError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';

/** Fleet breaker states the caller read already, by dependency (the step reads them with its journal write). */
export type BreakerStates = ReadonlyMap<string, FleetBreakerState>;

export interface ToolCallResult {
  record: ToolCallRecord;
  /** A new approval this call asks for (the step parks until it is decided). */
  newApproval?: Approval;
  /** A question the call's work asks a person (run-calls.ts makes it the call's next approval). */
  asked?: Pick<ToolNeedsInputError, 'round' | 'requirement' | 'proposed'>;
}

export interface ToolExecutorDeps {
  ledger: EffectLedger;
  metrics: Metrics;
  logger: Logger;
  toolTimeoutMs: number;
  /** REIN_MAX_TOOL_RESULT_BYTES: a longer result is cut before it is journaled, traced or shown. */
  maxResultBytes?: number;
  /** Breaker and bulkhead per dependency (the workers); omitted, tools run unguarded (engine tests). */
  protection?: { breakers: CircuitBreakers; bulkhead: (dependency: string) => Bulkhead };
  /** Tool arguments and results on the execute_tool spans (operator opt-in); absent, they are never exported. */
  captureContent?: CaptureContent;
  now?: () => number;
}

/**
 * Carries out the call plan (call-plan.ts), one call at a time: a call the plan refuses or
 * parks becomes its record; one it runs goes through the breaker and bulkhead of its
 * dependency, within its timeout, and, for a write, through the effect ledger (I4).
 */
export function createToolExecutor(deps: ToolExecutorDeps) {
  const now = deps.now ?? Date.now;

  const record = (
    call: ModelToolCall,
    args: unknown,
    outcome: ToolCallRecord['outcome'],
    observation: string,
    durationMs = 0,
    extra: Partial<ToolCallRecord> = {},
  ): ToolCallResult => {
    return { record: { id: call.id, name: call.name, arguments: args, outcome, observation, durationMs, ...extra } };
  };

  /** A write call's entry in the ledger, as its tool sees it (remote calls resume by what they remembered). */
  const effectHandle = (tool: string, ctx: CallContext, prior: Effect | null, reply?: InputReply): EffectHandle => ({
    resumed: prior?.state === 'intent',
    ...(prior?.state === 'intent' && prior.handle ? { remembered: prior.handle } : {}),
    remember: (handle) => deps.ledger.recordHandle(ctx.runId, ctx.idempotencyKey, tool, handle),
    ...(reply ? { reply } : {}),
  });

  /**
   * Runs the tool; a write tool through the effect ledger, whose recorded result is reused,
   * never re-run. A read tool has no effect to protect: cut off by a crash, it simply runs
   * again, so it costs the ledger nothing.
   */
  async function runTool(
    tool: Tool,
    call: ModelToolCall,
    args: unknown,
    ctx: CallContext,
    extra: Partial<ToolCallRecord>,
    breakerStates?: BreakerStates,
    reply?: InputReply,
  ): Promise<ToolCallResult> {
    const dependency = toolDependency(tool);
    const journaled = tool.kind === 'write';
    // One write decides: a recorded result is reused, an intent without one is a crash mid-call.
    // An open breaker throws below, before the tool runs, and the intent is cleared again.
    const prior = journaled ? await deps.ledger.recordIntent(ctx.runId, ctx.idempotencyKey, tool.name) : null;
    // The run finished (e.g. was cancelled) since this step read it: no effect starts any more.
    if (prior === 'finished')
      return record(call, args, 'rejected', `Not executed: the run finished before ${tool.name} started.`, 0, extra);
    if (prior?.state === 'done') {
      annotateActiveSpan({ [REIN_ATTR.effectOutcome]: 'replayed' });
      return record(call, args, prior.ok ? 'ok' : 'error', prior.observation, 0, extra);
    }
    // The intent stays in the ledger: the effect is neither recorded as done nor as failed.
    const uncertain = (why: string, durationMs = 0) => {
      annotateActiveSpan({ [REIN_ATTR.effectOutcome]: 'uncertain' });
      deps.logger.warn({ tool: tool.name, toolCallId: call.id, why }, 'effect outcome uncertain');
      return record(
        call,
        args,
        'uncertain',
        `The outcome of ${tool.name} is unknown: ${why}, and it is not safe to run it again. Do not assume it happened; tell the user a human will check.`,
        durationMs,
        extra,
      );
    };
    if (prior?.state === 'intent' && !tool.honoursIdempotencyKey) return uncertain('a worker stopped while it ran');
    const started = performance.now();
    let ok = true;
    let observation: string;
    try {
      // A tool never gets more time than the run has left; a cut by the run's deadline is no failure of the tool's (its breaker).
      const ownMs = tool.timeoutMs ?? deps.toolTimeoutMs;
      const msLeft = ctx.deadlineMs - now();
      const timeoutMs = Math.max(1, Math.min(ownMs, msLeft));
      const signal = AbortSignal.timeout(timeoutMs);
      const timedOut = () => (msLeft < ownMs ? new ToolCallCutError(timeoutMs) : new Error(`timed out after ${timeoutMs} ms`));
      const invoke = () =>
        Promise.race([
          tool.execute(args, {
            ...ctx,
            signal,
            logger: deps.logger.child({ runId: ctx.runId, step: ctx.step, tool: tool.name }),
            ...(journaled ? { effect: effectHandle(tool.name, ctx, prior, reply) } : {}),
          }),
          new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(timedOut()), { once: true })),
        ]);
      const p = deps.protection;
      const known = breakerStates?.get(dependency);
      const state = known && Promise.resolve(known);
      const result = p ? await p.bulkhead(dependency).run(() => p.breakers.call(dependency, invoke, state)) : await invoke();
      // Outside the breaker: a result with no JSON form is the app's bug, not its dependency's failure.
      observation = resultText(tool, result);
    } catch (err) {
      if (err instanceof BreakerOpenError || err instanceof BulkheadFullError) {
        if (journaled) await deps.ledger.clearIntent(ctx.runId, ctx.idempotencyKey); // it never ran
        throw err;
      }
      if (journaled && err instanceof ToolOutcomeUnknownError) return uncertain(err.message, Math.round(performance.now() - started));
      // Its work waits for a person: the intent (and what it remembered) stays, for the call's run after the reply.
      if (journaled && err instanceof ToolNeedsInputError) {
        const { round, requirement, proposed } = err;
        const waiting = record(call, args, 'awaiting_approval', err.message, Math.round(performance.now() - started), extra);
        return { ...waiting, asked: { round, requirement, proposed } };
      }
      ok = false;
      observation = errorObservation(err);
    }
    observation = capToolResult(observation, deps.maxResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES);
    const durationMs = Math.round(performance.now() - started);
    deps.metrics.toolDuration.observe({ tool: tool.name }, durationMs / 1000);
    // Refused once the run has finished: the step's stale commit then records the call in the trace (applyAfterTools, step-processor.ts).
    if (journaled) await deps.ledger.recordResult(ctx.runId, ctx.idempotencyKey, tool.name, ok, observation);
    annotateActiveSpan({ [REIN_ATTR.effectOutcome]: 'executed' });
    return record(call, args, ok ? 'ok' : 'error', observation, durationMs, extra);
  }

  /** Carries out one entry of the call plan: refused and waiting calls are recorded as they are, the others run. */
  async function execute(planned: PlannedCall, breakerStates?: BreakerStates): Promise<ToolCallResult> {
    for (const w of planned.warnings) deps.logger.warn(w.fields, w.msg);
    if (planned.approvalDecision) annotateActiveSpan({ [REIN_ATTR.approvalDecision]: planned.approvalDecision });
    // Not tools: the step processor carries them out (engine/child-runs.ts, the hand-off in afterTools).
    if (planned.kind === 'spawn' || planned.kind === 'transfer') throw new Error(`${planned.call.name} is not a tool call`);
    if (planned.kind !== 'run') {
      const record = plannedRecord(planned);
      return planned.kind === 'await_approval' && planned.newApproval ? { record, newApproval: planned.newApproval } : { record };
    }
    const result = await runTool(planned.tool, planned.call, planned.args, planned.ctx, planned.extra, breakerStates, planned.reply);
    if (!planned.resultPrefix || result.asked) return result;
    return { record: { ...result.record, observation: planned.resultPrefix + result.record.observation } };
  }

  /** One `execute_tool <tool>` span per call, whatever the call turns into. */
  return (planned: PlannedCall, breakerStates?: BreakerStates) =>
    toolSpan(planned.call, deps.captureContent, () => execute(planned, breakerStates));
}

export type ToolExecutor = ReturnType<typeof createToolExecutor>;
