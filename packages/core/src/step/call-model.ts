import type { ChatMessage, Decision, RunRecord } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { agentTool, toolDependency } from '@rein/define/internal';
import type { ModelLease } from '../adapters/model/model-gateway.js';
import { eventCommand } from '../adapters/redis/run-store.js';
import { CircuitBreakers, type FleetBreakerState } from '../adapters/resilience/circuit-breakers.js';
import { estimatePromptTokens } from '../policy/budget/token-estimator.js';
import { auditUsage } from '../policy/budget/usage-audit.js';
import { compaction, withModelSummary } from '../policy/step/context-policy.js';
import { isPlanning, planResponseFormat } from '../policy/step/plan.js';
import { completionRoom } from '../policy/step/step-policy.js';
import type { ReinError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { AgentViews } from './agent-views.js';
import { createDeltaPublisher } from './delta-publisher.js';
import { modelSummary } from './model-summary.js';
import type { StepClock, StepProcessorDeps } from './step-deps.js';
import type { BreakerStates } from './tool-executor.js';

export type CallModelDeps = Pick<
  StepProcessorDeps,
  'store' | 'journal' | 'model' | 'modelName' | 'tools' | 'metrics' | 'modelTimeoutMs' | 'modelIdleTimeoutMs'
> & { views: AgentViews; clock: StepClock };

/** The model's journaled decision, the run as it goes on (naming the snapshot texts now stored), and the breakers of the tools it calls. */
export interface ModelCall {
  decision: Decision;
  run: RunRecord;
  breakerStates: BreakerStates;
}

/**
 * Calls the model for this step and journals its reply before anything else happens (I3),
 * or returns null when the prompt cannot fit the budget (`budget`: the run with the limits
 * its tree leaves it). `lease`: the fleet lease the step took with its read, for the call.
 */
export async function callModel(
  deps: CallModelDeps,
  run: RunRecord,
  profile: AgentProfile,
  history: ChatMessage[],
  log: Logger,
  budget: RunRecord = run,
  lease?: ModelLease,
): Promise<ModelCall | null> {
  const { views, clock } = deps;
  const tools = views.specs(profile);
  const msLeft = Date.parse(run.deadlineAt) - clock.now();
  const timeoutMs = Math.max(1, Math.min(deps.modelTimeoutMs, msLeft));
  // Cut by the run's deadline rather than the model's own timeout: the caller's hurry, not the model's health.
  const deadlineBound = msLeft < deps.modelTimeoutMs;
  // What is sent (and estimated, and charged) is the history as the context policy compacts it.
  const estimate = (m: ChatMessage[]) => estimatePromptTokens(deps.modelName, m, []);
  const compacted = compaction(history, profile.context, estimate);
  // `summarize: 'model'`: the model writes the summary of the oldest turns (journaled; charged with this step's reply).
  const summarizing = compacted && profile.context?.summarize === 'model';
  // The summary's call comes first and takes its own lease: holding this one through it could starve it at a limit of one.
  if (summarizing) lease?.release();
  const summary = summarizing
    ? await modelSummary({ model: deps.model, journal: deps.journal, estimate, now: clock.now }, run, compacted.dropped, {
        timeoutMs,
        deadlineBound,
        ...(profile.models ? { models: profile.models } : {}),
      })
    : null;
  const sent = compacted ? (summary ? withModelSummary(compacted, summary.text) : compacted.sent) : history;
  const messages: ChatMessage[] = [views.system(profile), ...sent];
  const spent = summary ? summary.usage.promptTokens + summary.usage.completionTokens : 0;
  const budgeted = spent ? { ...budget, usage: { ...budget.usage, totalTokens: budget.usage.totalTokens + spent } } : budget;
  const maxTokens = completionRoom(budgeted, profile.maxCompletionTokens, estimatePromptTokens(deps.modelName, messages, tools));
  if (maxTokens === null) return null;
  const started = performance.now();
  // A planning call asks for the plan as structured output (validated all the same).
  const plan =
    isPlanning(profile.plan, run) && profile.plan ? planResponseFormat([...views.callable(profile).keys()], profile.plan) : undefined;
  // The reply streams to the run's event stream as it is written; only the whole reply is journaled (below).
  const deltas = createDeltaPublisher(
    (e) => deps.store.appendEvent(e),
    run.id,
    run.step,
    (err) => log.warn({ err }, 'could not publish model deltas'),
  );
  const request = {
    messages,
    tools,
    maxTokens,
    timeoutMs,
    deadlineBound,
    ...(deps.modelIdleTimeoutMs ? { idleTimeoutMs: deps.modelIdleTimeoutMs } : {}),
    onDelta: deltas.push,
    ...(lease && !summarizing ? { lease } : {}),
    ...(profile.models ? { models: profile.models } : {}),
    ...(plan ? { responseFormat: plan } : profile.output ? { responseFormat: profile.output.jsonSchema } : {}),
  };
  const reply = await deps.model.complete(request).catch(async (err: ReinError) => {
    await deltas.flush();
    deps.metrics.modelDuration.observe({ model: deps.modelName, outcome: err.code ?? 'error' }, (performance.now() - started) / 1000);
    throw err;
  });
  // The reply's last deltas go out with its journal entry, before the step's own events.
  const lastDeltas = await deltas.rest();
  const durationMs = Math.round(performance.now() - started);
  deps.metrics.modelDuration.observe({ model: reply.model, outcome: 'ok' }, durationMs / 1000);
  // The step is charged what the reply really took, whatever the endpoint reports.
  const { usage: replied, underreportedTokens } = auditUsage(reply.usage, reply);
  const usage = summary
    ? {
        promptTokens: replied.promptTokens + summary.usage.promptTokens,
        completionTokens: replied.completionTokens + summary.usage.completionTokens,
      }
    : replied;
  if (underreportedTokens > 0) {
    deps.metrics.modelUsageUnderreported.inc({ model: reply.model }, underreportedTokens);
    log.warn({ model: reply.model, reported: reply.usage, charged: usage }, 'model under-reported its usage; charging Rein’s count');
  }
  log.info({ model: reply.model, toolCalls: reply.toolCalls.length, durationMs, usage }, 'model replied');
  // The breakers of the tools the reply calls are read in the same round trip as the journal write.
  const dependencies = [
    ...new Set(
      reply.toolCalls.flatMap((c) => {
        const tool = agentTool(deps.tools, profile, c.name);
        return tool ? [toolDependency(tool)] : [];
      }),
    ),
  ];
  // The journal entry and the snapshot go together: one round trip for both.
  const { decision, blobs, reads } = await deps.journal.recordWithSnapshot(
    run.id,
    {
      schemaVersion: 1,
      step: run.step,
      model: reply.model,
      content: reply.content,
      toolCalls: reply.toolCalls,
      usage,
      maxTokens,
      durationMs,
      createdAt: clock.iso(),
    },
    {
      schemaVersion: 1,
      step: run.step,
      at: clock.iso(),
      // The model that answered (a fallback, maybe at another provider), not the one first asked.
      request: {
        model: reply.model,
        messages,
        tools: views.names(tools),
        toolSpecs: tools,
        maxTokens,
        timeoutMs,
        ...(profile.output ? { responseFormat: profile.output.jsonSchema } : {}),
        ...(reply.streamed ? { stream: true } : {}),
      },
      reply: reply.raw ?? { model: reply.model, content: reply.content, toolCalls: reply.toolCalls, usage: reply.usage },
    },
    // The history is the run's whole log as just read: the journal need not read it again.
    {
      log: history,
      storedBlobs: run.snapshotBlobs ?? [],
      alongside: lastDeltas ? [eventCommand(lastDeltas)] : [],
      reads: dependencies.map(CircuitBreakers.stateRead),
    },
  );
  const breakerStates = new Map(dependencies.map((d, i) => [d, reads[i] as FleetBreakerState]));
  const known = run.snapshotBlobs ?? [];
  const added = blobs.filter((hash) => !known.includes(hash));
  return { decision, run: added.length ? { ...run, snapshotBlobs: [...known, ...added] } : run, breakerStates };
}
