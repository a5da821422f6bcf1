import type { AgentProfile } from '../agents/agent-profile.js';
import { verifyBinding } from '../approvals/approval-binding.js';
import { approvalId } from '../approvals/approval-id.js';
import { BreakerOpenError, BulkheadFullError, ToolOutcomeUnknownError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Bulkhead } from '../resilience/bulkhead.js';
import type { CircuitBreakers, FleetBreakerState } from '../resilience/circuit-breakers.js';
import type { Approval } from '../schemas/approval.js';
import type { ModelToolCall } from '../schemas/message.js';
import type { RunRecord, ToolCallRecord } from '../schemas/run.js';
import { type EffectLedger, idempotencyKey } from '../store/effect-ledger.js';
import { hashArguments } from '../tools/argument-hash.js';
import {
  agentTool,
  parseToolArguments,
  requirementOf,
  resultText,
  type Tool,
  type ToolContext,
  thrownMessage,
  toolDependency,
} from '../tools/tool.js';
import { type CaptureContent, toolSpan } from '../tracing/genai.js';
import { REIN_ATTR } from '../tracing/rein-spans.js';
import { annotateActiveSpan } from '../tracing/spans.js';
import { planCoverProblem } from './plan.js';
import { capToolResult, DEFAULT_MAX_TOOL_RESULT_BYTES } from './tool-result-cap.js';

/** Fleet breaker states the caller read already, by dependency (the step reads them with its journal write). */
export type BreakerStates = ReadonlyMap<string, FleetBreakerState>;

export interface ToolCallResult {
  record: ToolCallRecord;
  /** A new approval this call asks for (the step parks until it is decided). */
  newApproval?: Approval;
}

export interface ToolExecutorDeps {
  tools: Map<string, Tool>;
  ledger: EffectLedger;
  metrics: Metrics;
  logger: Logger;
  toolTimeoutMs: number;
  approvalTtlMs: number;
  /** REIN_MAX_TOOL_RESULT_BYTES: a longer result is cut before it is journaled, traced or shown. */
  maxResultBytes?: number;
  /** Breaker and bulkhead per dependency (the workers); omitted, tools run unguarded (engine tests). */
  protection?: { breakers: CircuitBreakers; bulkhead: (dependency: string) => Bulkhead };
  /** Tool arguments and results on the execute_tool spans (operator opt-in); absent, they are never exported. */
  captureContent?: CaptureContent;
  now?: () => number;
}

/** A failed call as the model sees it: the stable code and whether trying again can help (ToolError's `retryable`). */
export function errorObservation(err: unknown): string {
  const { code, retryable } = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; retryable?: unknown };
  return JSON.stringify({
    error: typeof code === 'string' ? code : 'tool_failed',
    message: thrownMessage(err),
    retryable: retryable === true,
  });
}

/**
 * Turns one model-requested tool call into an observation. Everything the model got
 * wrong (unknown tool, bad arguments, missing permission) becomes an observation it
 * can act on; approvals gate write tools; effects go through the ledger.
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

  /**
   * Runs the tool; a write tool through the effect ledger, whose recorded result is reused,
   * never re-run. A read tool has no effect to protect: cut off by a crash, it simply runs
   * again, so it costs the ledger nothing.
   */
  async function runTool(
    tool: Tool,
    call: ModelToolCall,
    args: unknown,
    ctx: Omit<ToolContext, 'signal' | 'logger'> & { deadlineMs: number },
    extra: Partial<ToolCallRecord>,
    breakerStates?: BreakerStates,
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
      // A tool never gets more time than the run has left.
      const timeoutMs = Math.max(1, Math.min(tool.timeoutMs ?? deps.toolTimeoutMs, ctx.deadlineMs - now()));
      const signal = AbortSignal.timeout(timeoutMs);
      const invoke = () =>
        Promise.race([
          tool.execute(args, { ...ctx, signal, logger: deps.logger.child({ runId: ctx.runId, step: ctx.step, tool: tool.name }) }),
          new Promise<never>((_, reject) =>
            signal.addEventListener('abort', () => reject(new Error(`timed out after ${timeoutMs} ms`)), { once: true }),
          ),
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
      ok = false;
      observation = errorObservation(err);
    }
    observation = capToolResult(observation, deps.maxResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES);
    const durationMs = Math.round(performance.now() - started);
    deps.metrics.toolDuration.observe({ tool: tool.name }, durationMs / 1000);
    // Refused once the run has finished: the step's stale commit then records the call in the trace (act, step-processor.ts).
    if (journaled) await deps.ledger.recordResult(ctx.runId, ctx.idempotencyKey, tool.name, ok, observation);
    annotateActiveSpan({ [REIN_ATTR.effectOutcome]: 'executed' });
    return record(call, args, ok ? 'ok' : 'error', observation, durationMs, extra);
  }

  async function execute(
    run: RunRecord,
    profile: AgentProfile,
    step: number,
    index: number,
    call: ModelToolCall,
    approvals: Approval[],
    planStep?: number,
    breakerStates?: BreakerStates,
  ): Promise<ToolCallResult> {
    const tool = agentTool(deps.tools, profile, call.name);
    if (!tool) {
      return record(
        call,
        call.arguments,
        'unknown_tool',
        `Tool "${call.name}" is not available to this agent. Available tools: ${profile.tools.join(', ')}.`,
      );
    }
    const parsed = parseToolArguments(tool, call.arguments);
    if (!parsed.ok) return record(call, call.arguments, 'invalid_arguments', parsed.problem);

    const ctx = {
      tenantId: run.tenantId,
      userId: run.userId,
      roles: run.roles,
      runId: run.id,
      step,
      toolCallId: call.id,
      idempotencyKey: idempotencyKey(run.id, step, call.id),
      deadlineMs: Date.parse(run.deadlineAt),
    };
    if (tool.allowedRoles && !run.roles.some((r) => tool.allowedRoles?.includes(r))) {
      deps.logger.warn({ tool: tool.name }, "tool call forbidden for the caller's roles");
      return record(
        call,
        parsed.args,
        'forbidden',
        `You are not permitted to use ${tool.name} for this user (needs one of: ${tool.allowedRoles.join(', ')}).`,
      );
    }

    let requirement: ReturnType<typeof requirementOf>;
    try {
      requirement = requirementOf(tool, parsed.args, ctx);
    } catch (err) {
      // Fails closed: a call whose policy cannot say what it needs does not run.
      deps.logger.warn({ tool: tool.name, err: thrownMessage(err) }, 'approval policy failed');
      return record(call, parsed.args, 'error', errorObservation(err));
    }
    const planned = planStep === undefined ? {} : { planStep };
    if (!requirement) return runTool(tool, call, parsed.args, ctx, planned, breakerStates);
    // A call carrying out a step of the approved plan runs on the plan's approval (same tool, same arguments by hash),
    // while that approval still binds it; else it is asked for on its own, as if off the plan.
    if (planStep !== undefined && run.plan?.status === 'approved' && run.plan.approvalId) {
      const problem = planCoverProblem(run.plan, planStep, tool, requirement);
      if (!problem) return runTool(tool, call, parsed.args, ctx, { ...planned, approvalId: run.plan.approvalId }, breakerStates);
      deps.logger.warn({ tool: tool.name, approvalId: run.plan.approvalId, planStep, problem }, 'plan approval binding refused');
    }

    const id = approvalId(run.id, step, index);
    const gated = { approvalId: id };
    const approval = approvals.find((a) => a.id === id);
    annotateActiveSpan({ [REIN_ATTR.approvalDecision]: approval?.status ?? 'pending' });
    if (!approval) {
      const created = now();
      const newApproval: Approval = {
        schemaVersion: 1,
        id,
        runId: run.id,
        step,
        toolCallId: call.id,
        tenantId: run.tenantId,
        requestedBy: run.userId,
        toolName: tool.name,
        arguments: parsed.args,
        argsHash: hashArguments(parsed.args),
        policyVersion: tool.policyVersion ?? 1,
        summary: requirement.summary,
        risk: requirement.risk,
        requiredRole: requirement.requiredRole,
        status: 'pending',
        createdAt: new Date(created).toISOString(),
        expiresAt: new Date(created + (tool.approvalTtlMs ?? deps.approvalTtlMs)).toISOString(),
      };
      return { ...record(call, parsed.args, 'awaiting_approval', `Waiting for human approval (${id}).`, 0, gated), newApproval };
    }
    switch (approval.status) {
      case 'pending':
        return record(call, parsed.args, 'awaiting_approval', `Waiting for human approval (${id}).`, 0, gated);
      case 'approved': {
        const binding = verifyBinding(tool, approval, ctx);
        if (!binding.ok) {
          deps.logger.warn({ tool: tool.name, approvalId: id, problem: binding.problem }, 'approval binding refused');
          return record(call, parsed.args, 'rejected', `Not executed: ${binding.problem}.`, 0, gated);
        }
        const result = await runTool(tool, call, binding.args, ctx, gated, breakerStates);
        if (approval.editedBy === undefined) return result;
        const note = `Approved by ${approval.decidedBy} with edited arguments ${JSON.stringify(binding.args)} (you proposed ${JSON.stringify(approval.arguments)}). Result: `;
        return { record: { ...result.record, observation: note + result.record.observation } };
      }
      case 'rejected':
        return record(
          call,
          parsed.args,
          'rejected',
          `Not executed: rejected by ${approval.decidedBy}: ${approval.comment ?? 'no reason given'}`,
          0,
          gated,
        );
      case 'expired':
        return record(
          call,
          parsed.args,
          'rejected',
          `Not executed: nobody decided before the approval expired at ${approval.expiresAt}.`,
          0,
          gated,
        );
      case 'withdrawn':
        return record(call, parsed.args, 'rejected', 'Not executed: the approval was withdrawn.', 0, gated);
    }
  }

  /** One `execute_tool <tool>` span per call, whatever the call turns into. */
  return (...args: Parameters<typeof execute>) => {
    const [, , , , call] = args;
    return toolSpan(call, deps.captureContent, () => execute(...args));
  };
}

export type ToolExecutor = ReturnType<typeof createToolExecutor>;
