import pLimit from 'p-limit';
import type { AgentCatalog, AgentProfile } from '../agents/agent-profile.js';
import { costOf } from '../budgets/cost.js';
import type { TenantQuotas } from '../budgets/tenant-quotas.js';
import { estimatePromptTokens } from '../budgets/token-estimator.js';
import type { Price } from '../config.js';
import { type ReinError, StaleStepError } from '../errors.js';
import type { InputFilter } from '../guards/input-filter.js';
import type { PiiMasker } from '../guards/pii-masker.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ModelGateway } from '../model/model-gateway.js';
import type { Enqueue, StepJob } from '../queue/job-catalog.js';
import type { Approval } from '../schemas/approval.js';
import type { RunEvent } from '../schemas/event.js';
import type { ChatMessage } from '../schemas/message.js';
import { type Decision, type RunReason, type RunRecord, type StepRecord, TERMINAL_STATUSES, type ToolCallRecord } from '../schemas/run.js';
import type { ApprovalFeed } from '../store/approval-feed.js';
import type { DecisionJournal } from '../store/decision-journal.js';
import type { RunStore } from '../store/run-store.js';
import { type Tool, toolSpec } from '../tools/tool.js';
import { checkRepeats, failingTool } from './loop-guard.js';
import { runEvent } from './run-event.js';
import type { ToolCallResult, ToolExecutor } from './tool-executor.js';
import { toolMessageContent } from './tool-observation.js';

export interface GuardLimits {
  /** The N-th repeat of an identical call ends the run. */
  repeatLimit: number;
  /** N consecutive failures of one tool end the run. */
  toolFailureLimit: number;
  /** Longer tool results reach the model cut (the trace keeps them whole). */
  toolResultMaxChars: number;
}

export interface StepProcessorDeps {
  store: RunStore;
  feed: ApprovalFeed;
  journal: DecisionJournal;
  model: ModelGateway;
  /** The primary model's name, for the prompt-token estimate before the call. */
  modelName: string;
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  executeTool: ToolExecutor;
  enqueue: Enqueue;
  quotas: TenantQuotas;
  prices: Record<string, Price>;
  inputFilter: InputFilter;
  masker: PiiMasker;
  guards: GuardLimits;
  metrics: Metrics;
  logger: Logger;
  toolConcurrency: number;
  modelTimeoutMs: number;
  now?: () => number;
}

export type StepOutcome = 'continued' | 'parked' | 'finished' | 'already_committed' | 'skipped';

/** Answer given to the user when a run stops without one (the seeds' hand-off to a human). */
export const FALLBACK_ANSWER =
  'Sorry, I could not finish this request automatically. It has been handed to a human colleague, who will follow up. / 抱歉，这个问题暂时无法自动处理，已转交人工客服跟进。';

/** Smallest completion worth asking for; a call that cannot afford it is not made. */
const MIN_COMPLETION_TOKENS = 16;

interface Ending {
  status: 'succeeded' | 'failed';
  reason: RunReason;
  answer: string;
  /** Changes to the run besides the status (usage, step, cost). */
  run?: Partial<RunRecord>;
  step?: StepRecord;
  messages?: ChatMessage[];
  events?: RunEvent[];
}

/**
 * One ReAct step per call: check budgets, decide (journaled), act (loop guard, tools
 * through the ledger and the approval gate), then commit with compare-and-set and
 * schedule what comes next. Safe to run any number of times for the same step,
 * concurrently or after a crash.
 */
export function createStepProcessor(deps: StepProcessorDeps) {
  const now = deps.now ?? Date.now;
  const iso = () => new Date(now()).toISOString();

  /** After a commit (ours or someone else's), make sure the job that advances the run exists. */
  async function ensureNext(run: RunRecord, approvals?: Approval[]): Promise<void> {
    if (run.status === 'queued' || run.status === 'running') {
      await deps.enqueue('step', { runId: run.id, step: run.step });
    } else if (run.status === 'pending_approval') {
      const ofStep = (approvals ?? (await deps.store.approvals(run.id))).filter((a) => a.step === run.step);
      const pending = ofStep.filter((a) => a.status === 'pending');
      if (ofStep.length > 0 && pending.length === 0) {
        await deps.enqueue('resume', { runId: run.id, step: run.step });
      }
      await scheduleExpiry(pending);
    }
  }

  /** One delayed job per distinct expiry instant: expiry is enforced even if nobody ever looks. */
  async function scheduleExpiry(pending: Approval[]): Promise<void> {
    for (const at of new Set(pending.map((a) => Date.parse(a.expiresAt)))) {
      const first = pending.find((a) => Date.parse(a.expiresAt) === at);
      if (first) await deps.enqueue('expire', { runId: first.runId, step: first.step, at }, { delayMs: at - now() });
    }
  }

  /** Commits a terminal status with a reason; the answer is PII-masked, the history stays readable. */
  async function finish(run: RunRecord, e: Ending): Promise<RunRecord> {
    const finalAnswer = deps.masker.maskText(e.answer);
    const next = await deps.store.commit({
      from: run,
      to: { ...run, ...e.run, status: e.status, reason: e.reason, finalAnswer, pendingApprovals: [], updatedAt: iso() },
      ...(e.step ? { step: e.step } : {}),
      messages: e.messages ?? [],
      events: [...(e.events ?? []), runEvent('run.finished', run.id, run.step, { status: e.status, reason: e.reason, finalAnswer })],
    });
    deps.metrics.runsFinished.inc({ agent: run.agent, status: e.status, reason: e.reason });
    if (e.status === 'failed' && e.reason !== 'input_rejected') deps.metrics.budgetStops.inc({ reason: e.reason });
    return next;
  }

  /**
   * Why a run past its deadline failed: `model_unavailable` when its step was being held
   * back because no model could answer (the worker marks that), `deadline` otherwise —
   * the same answer whoever notices first (a delayed step waking late, or the sweeper).
   */
  async function deadlineReason(runId: string): Promise<RunReason> {
    return (await deps.store.waitingOn(runId)) === 'model_unavailable' ? 'model_unavailable' : 'deadline';
  }

  /** Invariant 6: limits are checked before the model is called, never after. */
  async function exhaustedBudget(run: RunRecord): Promise<RunReason | null> {
    if (now() >= Date.parse(run.deadlineAt)) return deadlineReason(run.id);
    if (run.step >= run.limits.maxSteps) return 'max_steps';
    if (run.usage.totalTokens >= run.limits.maxTokens) return 'token_budget';
    if (run.limits.maxCostUsd !== undefined && run.costUsd >= run.limits.maxCostUsd) return 'cost_budget';
    if (await deps.quotas.exhausted(run.tenantId)) return 'tenant_quota';
    return null;
  }

  /** The model's decision for this step: journaled, or made now — unless the prompt cannot fit the budget. */
  async function decide(run: RunRecord, profile: AgentProfile, log: Logger): Promise<Decision | 'token_budget'> {
    const messages: ChatMessage[] = [{ role: 'system', content: profile.systemPrompt }, ...(await deps.store.messages(run.id))];
    const tools = profile.tools.flatMap((name) => {
      const tool = deps.tools.get(name);
      return tool ? [toolSpec(tool)] : [];
    });
    const left = run.limits.maxTokens - run.usage.totalTokens - estimatePromptTokens(deps.modelName, messages, tools);
    if (left < MIN_COMPLETION_TOKENS) return 'token_budget';
    const started = performance.now();
    const reply = await deps.model
      .complete({
        messages,
        tools,
        maxTokens: Math.min(profile.maxCompletionTokens, left),
        timeoutMs: Math.max(1, Math.min(deps.modelTimeoutMs, Date.parse(run.deadlineAt) - now())),
      })
      .catch((err: ReinError) => {
        deps.metrics.modelDuration.observe({ model: deps.modelName, outcome: err.code ?? 'error' }, (performance.now() - started) / 1000);
        throw err;
      });
    const durationMs = Math.round(performance.now() - started);
    deps.metrics.modelDuration.observe({ model: reply.model, outcome: 'ok' }, durationMs / 1000);
    await deps.journal.snapshot(run.id, {
      schemaVersion: 1,
      step: run.step,
      at: iso(),
      request: {
        model: deps.modelName,
        messages,
        tools: tools.map((t) => t.function.name),
        toolSpecs: tools,
        maxTokens: Math.min(profile.maxCompletionTokens, left),
        timeoutMs: Math.max(1, Math.min(deps.modelTimeoutMs, Date.parse(run.deadlineAt) - now())),
      },
      reply: reply.raw ?? { model: reply.model, content: reply.content, toolCalls: reply.toolCalls, usage: reply.usage },
    });
    log.info({ model: reply.model, toolCalls: reply.toolCalls.length, durationMs, usage: reply.usage }, 'model replied');
    return deps.journal.record(run.id, {
      schemaVersion: 1,
      step: run.step,
      model: reply.model,
      content: reply.content,
      toolCalls: reply.toolCalls,
      usage: reply.usage,
      durationMs,
      createdAt: iso(),
    });
  }

  async function attempt(job: StepJob): Promise<StepOutcome> {
    let run = await deps.store.get(job.runId);
    if (!run || TERMINAL_STATUSES.includes(run.status) || run.step < job.step) return 'skipped';
    if (run.step > job.step) {
      await ensureNext(run);
      return 'already_committed';
    }
    const log = deps.logger.child({ runId: run.id, traceId: run.traceId, step: run.step, tenantId: run.tenantId });
    const approvals = await deps.store.approvals(run.id);
    if (run.status === 'pending_approval' && approvals.some((a) => a.step === job.step && a.status === 'pending')) {
      await ensureNext(run, approvals); // still parked: the decision (or the expiry job) resumes it
      return 'skipped';
    }

    const profile = deps.agents.get(run.agent);
    let decision = await deps.journal.get(run.id, run.step);
    if (!decision) {
      const exhausted = await exhaustedBudget(run);
      if (exhausted) {
        log.info({ reason: exhausted }, 'budget exhausted before the model call');
        await finish(run, { status: 'failed', reason: exhausted, answer: FALLBACK_ANSWER });
        return 'finished';
      }
      if (run.step === 0) {
        const verdict = deps.inputFilter(run.input);
        if (!verdict.ok) {
          log.warn({ rule: verdict.ruleId, kind: verdict.kind }, 'input rejected before any model call');
          await finish(run, { status: 'failed', reason: 'input_rejected', answer: verdict.answer });
          return 'finished';
        }
      }
      if (run.status === 'queued') run = await deps.store.commit({ from: run, to: { ...run, status: 'running', updatedAt: iso() } });
      await deps.store.appendEvent(runEvent('step.started', run.id, run.step));
      const made = await decide(run, profile, log);
      if (made === 'token_budget') {
        log.info('the next prompt does not fit the token budget; not calling the model');
        await finish(run, { status: 'failed', reason: 'token_budget', answer: FALLBACK_ANSWER });
        return 'finished';
      }
      decision = made;
    }
    // A step's duration is its model call (journaled) plus what happens from here on.
    return act(run, profile, decision, approvals, log, performance.now());
  }

  /** Acts on the step's decision: answer, or run its tool calls, then commit and schedule. */
  async function act(
    run: RunRecord,
    profile: AgentProfile,
    decision: Decision,
    approvals: Approval[],
    log: Logger,
    started: number,
  ): Promise<StepOutcome> {
    const stepUsage = { ...decision.usage, totalTokens: decision.usage.promptTokens + decision.usage.completionTokens };
    const stepCost = costOf(deps.prices, decision.model, decision.usage);
    // A resumed step was charged when it parked; it must not be charged again.
    const charged = run.status !== 'pending_approval';
    const spent: Partial<RunRecord> = charged
      ? {
          usage: {
            promptTokens: run.usage.promptTokens + stepUsage.promptTokens,
            completionTokens: run.usage.completionTokens + stepUsage.completionTokens,
            totalTokens: run.usage.totalTokens + stepUsage.totalTokens,
          },
          costUsd: run.costUsd + stepCost,
        }
      : {};
    const charge = async () => {
      if (!charged) return;
      deps.metrics.modelTokens.inc({ model: decision.model, type: 'prompt' }, decision.usage.promptTokens);
      deps.metrics.modelTokens.inc({ model: decision.model, type: 'completion' }, decision.usage.completionTokens);
      deps.metrics.modelTokenUsage.observe({ model: decision.model, type: 'prompt' }, decision.usage.promptTokens);
      deps.metrics.modelTokenUsage.observe({ model: decision.model, type: 'completion' }, decision.usage.completionTokens);
      deps.metrics.modelCost.inc({ model: decision.model, tenant: run.tenantId }, stepCost);
      await deps.quotas.recordUsage(run.tenantId, stepUsage.totalTokens, stepCost);
    };
    const toolCalls = decision.toolCalls.map((c) => ({
      id: c.id,
      type: 'function' as const,
      function: { name: c.name, arguments: c.arguments },
    }));
    const assistant: ChatMessage = { role: 'assistant', content: decision.content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
    const stepRecord = (records: ToolCallRecord[]): StepRecord => ({
      schemaVersion: 1,
      index: run.step,
      model: decision.model,
      thought: decision.toolCalls.length ? decision.content : null,
      toolCalls: records,
      usage: stepUsage,
      costUsd: stepCost,
      durationMs: Math.round(performance.now() - started) + decision.durationMs,
      finishedAt: iso(),
    });
    const stepFinished = (outcome: string) =>
      runEvent('step.finished', run.id, run.step, { outcome, thought: decision.content, usage: stepUsage });
    const toolEvents = (records: ToolCallRecord[]) =>
      records.map((r) =>
        runEvent('tool.result', run.id, run.step, {
          toolCallId: r.id,
          name: r.name,
          arguments: r.arguments,
          outcome: r.outcome,
          observation: r.observation,
        }),
      );
    const stop = async (reason: RunReason, records: ToolCallRecord[]): Promise<StepOutcome> => {
      log.warn({ reason }, 'run stopped by a loop breaker');
      await finish(run, {
        status: 'failed',
        reason,
        answer: FALLBACK_ANSWER,
        run: { ...spent, step: run.step + 1 },
        step: stepRecord(records),
        events: [...toolEvents(records), stepFinished(reason)],
      });
      await charge();
      return 'finished';
    };

    if (decision.toolCalls.length === 0) {
      await finish(run, {
        status: 'succeeded',
        reason: 'completed',
        answer: decision.content ?? '',
        run: { ...spent, step: run.step + 1 },
        step: stepRecord([]),
        messages: [assistant],
        events: [stepFinished('answered')],
      });
      await charge();
      deps.metrics.steps.inc({ outcome: 'finished' });
      log.info('run succeeded');
      return 'finished';
    }

    const history = (await deps.store.steps(run.id)).filter((s) => s.index < run.step).flatMap((s) => s.toolCalls);
    const repeats = checkRepeats(history, decision.toolCalls, deps.guards.repeatLimit);
    if (repeats.exhausted) {
      const looped = repeats.exhausted;
      return stop(
        'repeated_call',
        decision.toolCalls.map((c) => ({
          id: c.id,
          name: c.name,
          arguments: c.arguments,
          outcome: c === looped ? 'repeated' : 'rejected',
          observation:
            c === looped
              ? `Stopped: ${c.name} was asked for with the same arguments ${deps.guards.repeatLimit + 1} times.`
              : 'Not executed: the run stopped.',
          durationMs: 0,
        })),
      );
    }

    const limit = pLimit(deps.toolConcurrency);
    const results = await Promise.all(
      decision.toolCalls.map((call, index): Promise<ToolCallResult> => {
        const earlier = repeats.earlier.get(index);
        if (earlier && deps.tools.get(call.name)?.kind === 'read') {
          deps.metrics.toolCalls.inc({ tool: call.name, outcome: 'snapshot' });
          return Promise.resolve({ record: { ...earlier, id: call.id, durationMs: 0, fromSnapshot: true } });
        }
        return limit(() => deps.executeTool(run, profile, run.step, index, call, approvals));
      }),
    );
    const records = results.map((r) => r.record);
    const newApprovals = results.flatMap((r) => (r.newApproval ? [r.newApproval] : []));
    for (const r of records.filter((x) => x.outcome === 'uncertain')) {
      await deps.feed.publish(run.tenantId, {
        type: 'effect.uncertain',
        runId: run.id,
        step: run.step,
        toolCallId: r.id,
        tool: r.name,
        at: iso(),
      });
    }

    const waiting = records.filter((r) => r.outcome === 'awaiting_approval');
    if (waiting.length > 0) {
      const pendingIds = waiting.map((r) => r.approvalId as string);
      await deps.store.commit({
        from: run,
        to: {
          ...run,
          ...spent,
          status: 'pending_approval',
          pendingApprovals: pendingIds,
          parkedAt: run.parkedAt ?? iso(),
          updatedAt: iso(),
        },
        step: stepRecord(records),
        approvals: newApprovals,
        events: [
          ...toolEvents(records),
          ...newApprovals.map((a) =>
            runEvent('approval.requested', a.runId, a.step, { approvalId: a.id, toolName: a.toolName, summary: a.summary, risk: a.risk }),
          ),
          stepFinished('parked'),
        ],
      });
      await charge();
      for (const a of newApprovals) {
        await deps.feed.publish(a.tenantId, {
          type: 'approval.requested',
          approvalId: a.id,
          runId: a.runId,
          status: a.status,
          at: a.createdAt,
        });
      }
      await scheduleExpiry(newApprovals);
      deps.metrics.steps.inc({ outcome: 'parked' });
      log.info({ approvals: pendingIds }, 'run parked for approval');
      return 'parked';
    }

    const failing = failingTool([...history, ...records], deps.guards.toolFailureLimit);
    if (failing) return stop('tool_failures', records);

    // Time spent waiting for a human does not count against the run's deadline.
    const parkedFor = run.parkedAt ? now() - Date.parse(run.parkedAt) : 0;
    const { parkedAt: _parked, ...unparked } = run;
    const next = await deps.store.commit({
      from: run,
      to: {
        ...unparked,
        ...spent,
        status: 'running',
        step: run.step + 1,
        pendingApprovals: [],
        deadlineAt: new Date(Date.parse(run.deadlineAt) + parkedFor).toISOString(),
        updatedAt: iso(),
      },
      step: stepRecord(records),
      messages: [
        assistant,
        ...records.map(
          (r): ChatMessage => ({
            role: 'tool',
            tool_call_id: r.id,
            content: toolMessageContent(r.name, r.observation, deps.guards.toolResultMaxChars),
          }),
        ),
      ],
      events: [...toolEvents(records), stepFinished('continued')],
    });
    await charge();
    deps.metrics.steps.inc({ outcome: 'continued' });
    await ensureNext(next);
    return 'continued';
  }

  async function process(job: StepJob): Promise<StepOutcome> {
    try {
      return await attempt(job);
    } catch (err) {
      if (!(err instanceof StaleStepError)) throw err;
      // Someone else committed first (invariant 2): just make sure the run moves on.
      deps.logger.info({ runId: job.runId, step: job.step }, 'step already committed by another attempt');
      const current = await deps.store.get(job.runId);
      if (current) await ensureNext(current);
      return 'already_committed';
    }
  }

  /**
   * Ends a run that can no longer make progress (its step ran out of attempts, hit a
   * non-retryable error, or passed its deadline), so that nothing hangs (invariant 9).
   */
  async function fail(
    runId: string,
    reason: RunReason,
    detail: string,
    onlyIf: (run: RunRecord) => boolean = () => true,
  ): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const run = await deps.store.get(runId);
      if (!run || TERMINAL_STATUSES.includes(run.status) || !onlyIf(run)) return false;
      try {
        deps.logger.warn({ runId: run.id, step: run.step, reason, detail }, 'run failed');
        await finish(run, { status: 'failed', reason, answer: FALLBACK_ANSWER });
        return true;
      } catch (err) {
        if (!(err instanceof StaleStepError)) throw err;
      }
    }
    return false;
  }

  return { process, fail, ensureNext, deadlineReason };
}

export type StepProcessor = ReturnType<typeof createStepProcessor>;
