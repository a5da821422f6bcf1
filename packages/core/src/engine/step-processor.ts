import pLimit from 'p-limit';
import type { AgentCatalog } from '../agents/agent-profile.js';
import { type ReinError, StaleStepError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ModelGateway } from '../model/model-gateway.js';
import type { Enqueue, StepJob } from '../queue/job-catalog.js';
import type { Approval } from '../schemas/approval.js';
import type { RunEvent } from '../schemas/event.js';
import type { ChatMessage } from '../schemas/message.js';
import { type Decision, type RunReason, type RunRecord, type StepRecord, TERMINAL_STATUSES } from '../schemas/run.js';
import type { ApprovalFeed } from '../store/approval-feed.js';
import type { DecisionJournal } from '../store/decision-journal.js';
import type { RunStore } from '../store/run-store.js';
import { type Tool, toolSpec } from '../tools/tool.js';
import { runEvent } from './run-event.js';
import type { ToolExecutor } from './tool-executor.js';

export interface StepProcessorDeps {
  store: RunStore;
  feed: ApprovalFeed;
  journal: DecisionJournal;
  model: ModelGateway;
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  executeTool: ToolExecutor;
  enqueue: Enqueue;
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

/**
 * One ReAct step per call: decide (journaled), act (tools through the ledger and the
 * approval gate), then commit with compare-and-set and schedule what comes next.
 * Safe to run any number of times for the same step, concurrently or after a crash.
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

  /** Commits a terminal status; the run's history so far stays readable. */
  function finish(
    run: RunRecord,
    status: 'succeeded' | 'failed',
    reason: RunReason,
    finalAnswer: string,
    extra: Partial<RunRecord> = {},
    events: RunEvent[] = [],
    step?: StepRecord,
    messages: ChatMessage[] = [],
  ) {
    deps.metrics.runsFinished.inc({ agent: run.agent, status, reason });
    return deps.store.commit({
      from: run,
      to: {
        ...run,
        ...extra,
        status,
        reason,
        finalAnswer,
        pendingApprovals: [],
        updatedAt: iso(),
      },
      step,
      messages,
      events: [
        ...events,
        runEvent('run.finished', run.id, run.step, {
          status,
          reason,
          finalAnswer,
        }),
      ],
    });
  }

  /** Invariant 6: limits are checked before the model is called, never after. */
  function exhaustedBudget(run: RunRecord): RunReason | null {
    if (now() >= Date.parse(run.deadlineAt)) return 'deadline';
    if (run.step >= run.limits.maxSteps) return 'max_steps';
    if (run.usage.totalTokens >= run.limits.maxTokens) return 'token_budget';
    return null;
  }

  async function decide(run: RunRecord, log: Logger): Promise<Decision> {
    const journaled = await deps.journal.get(run.id, run.step);
    if (journaled) return journaled;
    const profile = deps.agents.get(run.agent);
    const history = await deps.store.messages(run.id);
    const remainingMs = Date.parse(run.deadlineAt) - now();
    const started = performance.now();
    const reply = await deps.model
      .complete({
        messages: [{ role: 'system', content: profile.systemPrompt }, ...history],
        tools: profile.tools.flatMap((name) => {
          const tool = deps.tools.get(name);
          return tool ? [toolSpec(tool)] : [];
        }),
        maxTokens: Math.min(profile.maxCompletionTokens, run.limits.maxTokens - run.usage.totalTokens),
        timeoutMs: Math.max(1, Math.min(deps.modelTimeoutMs, remainingMs)),
      })
      .catch((err: ReinError) => {
        deps.metrics.modelDuration.observe({ model: 'unknown', outcome: err.code ?? 'error' }, (performance.now() - started) / 1000);
        throw err;
      });
    const durationMs = Math.round(performance.now() - started);
    deps.metrics.modelDuration.observe({ model: reply.model, outcome: 'ok' }, durationMs / 1000);
    log.info(
      {
        model: reply.model,
        toolCalls: reply.toolCalls.length,
        durationMs,
        usage: reply.usage,
      },
      'model replied',
    );
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
    const log = deps.logger.child({
      runId: run.id,
      traceId: run.traceId,
      step: run.step,
      tenantId: run.tenantId,
    });
    const approvals = await deps.store.approvals(run.id);
    if (run.status === 'pending_approval' && approvals.some((a) => a.step === job.step && a.status === 'pending')) {
      await ensureNext(run, approvals); // still parked: the decision (or the expiry job) resumes it
      return 'skipped';
    }

    const started = performance.now();
    let decision = await deps.journal.get(run.id, run.step);
    if (!decision) {
      const exhausted = exhaustedBudget(run);
      if (exhausted) {
        log.info({ reason: exhausted }, 'budget exhausted before the model call');
        await finish(run, 'failed', exhausted, FALLBACK_ANSWER);
        return 'finished';
      }
      if (run.status === 'queued') {
        run = await deps.store.commit({
          from: run,
          to: { ...run, status: 'running', updatedAt: iso() },
        });
      }
      await deps.store.appendEvent(runEvent('step.started', run.id, run.step));
      decision = await decide(run, log);
    }
    return act(run, decision, approvals, log, started);
  }

  /** Acts on the step's decision: answer, or run its tool calls, then commit and schedule. */
  async function act(run: RunRecord, decision: Decision, approvals: Approval[], log: Logger, started: number): Promise<StepOutcome> {
    const profile = deps.agents.get(run.agent);
    const stepUsage = { ...decision.usage, totalTokens: decision.usage.promptTokens + decision.usage.completionTokens };
    const usage = {
      promptTokens: run.usage.promptTokens + stepUsage.promptTokens,
      completionTokens: run.usage.completionTokens + stepUsage.completionTokens,
      totalTokens: run.usage.totalTokens + stepUsage.totalTokens,
    };
    const toolCalls = decision.toolCalls.map((c) => ({
      id: c.id,
      type: 'function' as const,
      function: { name: c.name, arguments: c.arguments },
    }));
    const assistant: ChatMessage = { role: 'assistant', content: decision.content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
    const stepRecord = (records: StepRecord['toolCalls']): StepRecord => ({
      schemaVersion: 1,
      index: run.step,
      model: decision.model,
      thought: decision.toolCalls.length ? decision.content : null,
      toolCalls: records,
      usage: stepUsage,
      durationMs: Math.round(performance.now() - started) + decision.durationMs,
      finishedAt: iso(),
    });
    const countTokens = () => {
      deps.metrics.modelTokens.inc({ model: decision.model, type: 'prompt' }, decision.usage.promptTokens);
      deps.metrics.modelTokens.inc({ model: decision.model, type: 'completion' }, decision.usage.completionTokens);
    };

    if (decision.toolCalls.length === 0) {
      const finished = runEvent('step.finished', run.id, run.step, { outcome: 'answered', thought: null });
      await finish(run, 'succeeded', 'completed', decision.content ?? '', { usage, step: run.step + 1 }, [finished], stepRecord([]), [
        assistant,
      ]);
      countTokens();
      deps.metrics.steps.inc({ outcome: 'finished' });
      log.info('run succeeded');
      return 'finished';
    }

    const limit = pLimit(deps.toolConcurrency);
    const results = await Promise.all(
      decision.toolCalls.map((call, index) => limit(() => deps.executeTool(run, profile, run.step, index, call, approvals))),
    );
    const records = results.map((r) => r.record);
    const newApprovals = results.flatMap((r) => (r.newApproval ? [r.newApproval] : []));
    const toolEvents = records.map((r) =>
      runEvent('tool.result', run.id, run.step, {
        toolCallId: r.id,
        name: r.name,
        arguments: r.arguments,
        outcome: r.outcome,
        observation: r.observation,
      }),
    );

    const waiting = records.filter((r) => r.outcome === 'awaiting_approval');
    if (waiting.length > 0) {
      const pendingIds = waiting.map((r) => r.approvalId as string);
      const firstPark = run.status !== 'pending_approval';
      await deps.store.commit({
        from: run,
        to: { ...run, status: 'pending_approval', pendingApprovals: pendingIds, ...(firstPark ? { usage } : {}), updatedAt: iso() },
        step: stepRecord(records),
        approvals: newApprovals,
        events: [
          ...toolEvents,
          ...newApprovals.map((a) =>
            runEvent('approval.requested', a.runId, a.step, { approvalId: a.id, toolName: a.toolName, summary: a.summary, risk: a.risk }),
          ),
          runEvent('step.finished', run.id, run.step, { outcome: 'parked', thought: decision.content }),
        ],
      });
      if (firstPark) countTokens();
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

    // Tokens were added to usage when the step parked; a resumed step must not add them again.
    const resumed = run.status === 'pending_approval';
    const next = await deps.store.commit({
      from: run,
      to: { ...run, status: 'running', step: run.step + 1, usage: resumed ? run.usage : usage, pendingApprovals: [], updatedAt: iso() },
      step: stepRecord(records),
      messages: [assistant, ...records.map((r): ChatMessage => ({ role: 'tool', tool_call_id: r.id, content: r.observation }))],
      events: [...toolEvents, runEvent('step.finished', run.id, run.step, { outcome: 'continued', thought: decision.content })],
    });
    if (!resumed) countTokens();
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
   * Ends a run whose step can no longer make progress (its job ran out of attempts or
   * hit a non-retryable error), so that nothing hangs (invariant 9).
   */
  async function fail(job: StepJob, reason: RunReason, detail: string): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const run = await deps.store.get(job.runId);
      if (!run || TERMINAL_STATUSES.includes(run.status) || run.step !== job.step) return;
      try {
        deps.logger.warn({ runId: run.id, step: run.step, reason, detail }, 'run failed');
        await finish(run, 'failed', reason, FALLBACK_ANSWER);
        return;
      } catch (err) {
        if (!(err instanceof StaleStepError)) throw err;
      }
    }
  }

  return { process, fail, ensureNext };
}

export type StepProcessor = ReturnType<typeof createStepProcessor>;
