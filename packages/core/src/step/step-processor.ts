import type { Approval, ChatMessage } from '@rein/contract';
import { type Decision, type RunReason, type RunRecord, TERMINAL_STATUSES, type ToolCallRecord } from '@rein/contract';
import type { AgentCatalog, AgentProfile } from '@rein/define/internal';
import { agentTool, delegationSpecs, type Tool, toolDependency, toolSpec } from '@rein/define/internal';
import pLimit from 'p-limit';
import type { ModelGateway } from '../adapters/model/model-gateway.js';
import type { Enqueue, StepJob } from '../adapters/queue/job-catalog.js';
import { type ApprovalFeed, approvalEvent } from '../adapters/redis/approval-feed.js';
import type { DecisionJournal } from '../adapters/redis/decision-journal.js';
import { eventCommand, type RunStore } from '../adapters/redis/run-store.js';
import type { TenantQuotas } from '../adapters/redis/tenant-quotas.js';
import { CircuitBreakers, type FleetBreakerState } from '../adapters/resilience/circuit-breakers.js';
import { toolSpan } from '../adapters/tracing/genai.js';
import type { FleetVersions } from '../policy/app/fleet-versions.js';
import type { EscalationDefaults } from '../policy/approvals/escalation.js';
import { budgetVerdict, raisedLimits } from '../policy/budget/budget-ask.js';
import { estimatePromptTokens } from '../policy/budget/token-estimator.js';
import { auditUsage } from '../policy/budget/usage-audit.js';
import { runEvent } from '../policy/run/run-event.js';
import { cancelRun, moveRun, raiseBudget, retryOnStale, startRun } from '../policy/run/run-transitions.js';
import { versionVerdict, withdrawnOnMove } from '../policy/run/version-route.js';
import { distinctCallIds } from '../policy/step/call-identity.js';
import { type DelegationLimits, type PlannedCall, planCalls, transferRecord } from '../policy/step/call-plan.js';
import { compaction, READ_RESULT_TOOL, withModelSummary } from '../policy/step/context-policy.js';
import { type EarlierCall, guardFromHistory } from '../policy/step/loop-guard.js';
import { isPlanning, planOutcome, planResponseFormat } from '../policy/step/plan.js';
import { type ReplayVerdict, recordingOf, replayProfile, replayStep } from '../policy/step/replay-policy.js';
import {
  afterDecision,
  afterPlan,
  afterReply,
  afterTools,
  askForBudget,
  completionRoom,
  deadlineReason,
  exhaustedBudget,
  failRun,
  type GuardLimits,
  gate,
  replayStopped,
  type StepFacts,
  type Transition,
} from '../policy/step/step-policy.js';
import { boundedByTree, treeTotal } from '../policy/step/sub-agents.js';
import type { Price } from '../shared/config.js';
import { type ReinError, StaleStepError } from '../shared/errors.js';
import type { InputFilter } from '../shared/guards/input-filter.js';
import type { PiiMasker } from '../shared/guards/pii-masker.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';
import type { TransitionApplier } from './apply-transition.js';
import type { SpawnChild } from './child-runs.js';
import { createDeltaPublisher } from './delta-publisher.js';
import { modelSummary } from './model-summary.js';
import type { BreakerStates, ToolCallResult, ToolExecutor } from './tool-executor.js';

export type { GuardLimits } from '../policy/step/step-policy.js';

export interface StepProcessorDeps {
  store: RunStore;
  /** Where every Transition takes effect (shared with the run's other writers). */
  applier: TransitionApplier;
  feed: ApprovalFeed;
  journal: DecisionJournal;
  model: ModelGateway;
  /** The primary model's name, for the prompt-token estimate before the call. */
  modelName: string;
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  executeTool: ToolExecutor;
  quotas: TenantQuotas;
  prices: Record<string, Price>;
  inputFilter: InputFilter;
  masker: PiiMasker;
  guards: GuardLimits;
  metrics: Metrics;
  logger: Logger;
  toolConcurrency: number;
  /** A model call's whole time; the run's deadline cuts it sooner when that comes first. */
  modelTimeoutMs: number;
  /** The longest silence of a streamed reply once it started. */
  modelIdleTimeoutMs?: number;
  /** How long a plan's or a call's approval stays decidable unless its tool says otherwise (APPROVAL_TTL_MS). */
  approvalTtlMs: number;
  /** REIN_BUDGET_FOUR_EYES: a budget raise's requester may not grant it, even holding the role. */
  budgetFourEyes: boolean;
  /**
   * The app version this worker runs and what it knows of the fleet's: a job of a run on
   * another version is sent on to that version's workers, or (an upgrade routed it here)
   * the run is moved to this version first. None (engine tests): every run is this worker's.
   */
  versions?: StepVersions;
  /** The app-wide escalation by required role (REIN_APPROVAL_ESCALATION). */
  escalation?: EscalationDefaults;
  /** Starts `call_<agent>` children (engine/child-runs.ts); absent, sub-agent calls are refused. */
  spawnChild?: SpawnChild;
  /** REIN_MAX_AGENT_DEPTH, REIN_MAX_CHILDREN_PER_STEP. */
  delegation?: DelegationLimits;
  now?: () => number;
}

export interface StepVersions {
  own: string;
  known(): FleetVersions;
  fresh(): Promise<FleetVersions>;
  /** Hands a run's step to the workers of another version (a repair job on their queue). */
  enqueue: Enqueue;
}

/** `rerouted`: the job reached a worker of another version than its run's, which sent it on. */
export type StepOutcome = 'continued' | 'parked' | 'waiting' | 'finished' | 'already_committed' | 'skipped' | 'rerouted';

const OUTCOME = { continue: 'continued', park: 'parked', wait: 'waiting', finish: 'finished' } as const;

/** Outcomes of a write call whose effect happened or may have happened. */
const EFFECT_OUTCOMES: readonly ToolCallRecord['outcome'][] = ['ok', 'error', 'uncertain'];

/**
 * One ReAct step per call, in phases (docs/design.md, "The phases of a step"): read and
 * triage (`attempt`: one round trip, then the pure `gate`), call the model and journal its
 * reply (`decide`), decide what follows (`act`: the pure `afterDecision` / `afterPlan`), plan
 * the calls (the pure `planCalls`), run them (`runCalls`), conclude (the pure `afterTools`)
 * and apply the Transition (`applyAfterTools`, `applied`). Safe to run any number of times
 * for the same step, concurrently or after a crash.
 */
export function createStepProcessor(deps: StepProcessorDeps) {
  const now = deps.now ?? Date.now;
  const iso = () => new Date(now()).toISOString();
  const mask = (text: string) => deps.masker.maskText(text);
  const { applier } = deps;

  // A tool's JSON schema is derived from its zod schema once, not on every step.
  const specs = new WeakMap<Tool, ReturnType<typeof toolSpec>>();
  // …and an agent's list stays the same array while its tools do (an MCP server's list may
  // change between steps), so what is derived from the list (its token count) is kept too.
  const specLists = new WeakMap<AgentProfile, Array<ReturnType<typeof toolSpec>>>();
  // Sub-agents and hand-offs are tools too, as the model sees them: fixed per agent.
  const delegationSpecsOf = new WeakMap<AgentProfile, ReturnType<typeof delegationSpecs>>();
  const delegationOfProfile = (profile: AgentProfile) => {
    let list = delegationSpecsOf.get(profile);
    if (!list) {
      list = delegationSpecs(profile, (agent) => (deps.agents.has(agent) ? deps.agents.get(agent).description : undefined));
      delegationSpecsOf.set(profile, list);
    }
    return list;
  };
  const toolSpecsOf = (profile: AgentProfile) => {
    const own = profile.tools.flatMap((name) => {
      const tool = deps.tools.get(name);
      if (!tool) return [];
      let spec = specs.get(tool);
      if (!spec) {
        spec = toolSpec(tool);
        specs.set(tool, spec);
      }
      return [spec];
    });
    const list = [...own, ...delegationOfProfile(profile)];
    const last = specLists.get(profile);
    if (last && last.length === list.length && last.every((spec, i) => spec === list[i])) return last;
    specLists.set(profile, list);
    return list;
  };
  // Its tool names likewise: the journal keeps the list's hash with the array.
  const toolNames = new WeakMap<Array<ReturnType<typeof toolSpec>>, string[]>();
  const toolNamesOf = (specList: Array<ReturnType<typeof toolSpec>>) => {
    let names = toolNames.get(specList);
    if (!names) {
      names = specList.map((t) => t.function.name);
      toolNames.set(specList, names);
    }
    return names;
  };
  // The system message, one object per agent: its token count is kept with it.
  const systemMessages = new WeakMap<AgentProfile, ChatMessage>();
  const systemMessageOf = (profile: AgentProfile): ChatMessage => {
    let m = systemMessages.get(profile);
    if (m?.content !== profile.instructions) {
      m = { role: 'system', content: profile.instructions };
      systemMessages.set(profile, m);
    }
    return m;
  };

  /** The tools an agent may call (a plan may use nothing else; read_result is not a plan step). */
  const toolsOf = (profile: AgentProfile) =>
    new Map(
      profile.tools
        .flatMap((name) => (name === READ_RESULT_TOOL ? [] : [[name, deps.tools.get(name)] as const]))
        .filter((e): e is [string, Tool] => e[1] !== undefined),
    );

  /**
   * The model's decision for this step, made now and journaled, with the run as it goes on
   * (naming the snapshot texts now stored) — or null when the prompt cannot fit the budget.
   */
  async function decide(
    run: RunRecord,
    profile: AgentProfile,
    history: ChatMessage[],
    log: Logger,
    budget: RunRecord = run,
  ): Promise<{ decision: Decision; run: RunRecord; breakerStates: BreakerStates } | null> {
    const tools = toolSpecsOf(profile);
    const msLeft = Date.parse(run.deadlineAt) - now();
    const timeoutMs = Math.max(1, Math.min(deps.modelTimeoutMs, msLeft));
    // Cut by the run's deadline rather than the model's own timeout: the caller's hurry, not the model's health.
    const deadlineBound = msLeft < deps.modelTimeoutMs;
    // What is sent (and estimated, and charged) is the history as the context policy compacts it.
    const estimate = (m: ChatMessage[]) => estimatePromptTokens(deps.modelName, m, []);
    const compacted = compaction(history, profile.context, estimate);
    // `summarize: 'model'`: the model writes the summary of the oldest turns (journaled; charged with this step's reply).
    const summary =
      compacted && profile.context?.summarize === 'model'
        ? await modelSummary({ model: deps.model, journal: deps.journal, estimate, now }, run, compacted.dropped, {
            timeoutMs,
            deadlineBound,
            ...(profile.models ? { models: profile.models } : {}),
          })
        : null;
    const sent = compacted ? (summary ? withModelSummary(compacted, summary.text) : compacted.sent) : history;
    const messages: ChatMessage[] = [systemMessageOf(profile), ...sent];
    const spent = summary ? summary.usage.promptTokens + summary.usage.completionTokens : 0;
    const budgeted = spent ? { ...budget, usage: { ...budget.usage, totalTokens: budget.usage.totalTokens + spent } } : budget;
    const maxTokens = completionRoom(budgeted, profile.maxCompletionTokens, estimatePromptTokens(deps.modelName, messages, tools));
    if (maxTokens === null) return null;
    const started = performance.now();
    // A planning call asks for the plan as structured output (validated all the same).
    const plan = isPlanning(profile.plan, run) && profile.plan ? planResponseFormat([...toolsOf(profile).keys()], profile.plan) : undefined;
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
        createdAt: iso(),
      },
      {
        schemaVersion: 1,
        step: run.step,
        at: iso(),
        // The model that answered (a fallback, maybe at another provider), not the one first asked.
        request: {
          model: reply.model,
          messages,
          tools: toolNamesOf(tools),
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

  async function applied(run: RunRecord, t: Transition, log: Logger): Promise<StepOutcome> {
    await applier.apply(run, { kind: 'step', transition: stamped(t), log });
    return OUTCOME[t.kind];
  }

  /** The step record says which version ran it: the trace shows where a run changed version. */
  const stamped = (t: Transition): Transition =>
    deps.versions && t.change.step ? { ...t, change: { ...t.change, step: { ...t.change.step, appVersion: deps.versions.own } } } : t;

  /**
   * Whether this worker runs the run's step (`own`), sent it on to its version's workers
   * (`rerouted`), or moved the run to its own version first (`moved`: an upgrade), with the
   * approvals whose tool changed withdrawn in the same commit. The cached fleet state is
   * read again before anything but `own`: it may be up to a second behind an upgrade.
   */
  async function placeRun(run: RunRecord, approvals: Approval[]): Promise<'own' | 'rerouted' | 'moved'> {
    const v = deps.versions;
    if (!v || versionVerdict(run, v.known(), v.own).kind === 'own') return 'own';
    const verdict = versionVerdict(run, await v.fresh(), v.own);
    if (verdict.kind === 'own') return 'own';
    const log = deps.logger.child({
      runId: run.id,
      traceId: run.traceId,
      step: run.step,
      tenantId: run.tenantId,
      appVersion: run.appVersion,
    });
    if (verdict.kind === 'reroute') {
      const repair = { runId: run.id, step: run.step, version: run.version, tenantId: run.tenantId };
      await v.enqueue('repair', run.traceparent ? { ...repair, traceparent: run.traceparent } : repair, {
        route: { appVersion: verdict.to },
      });
      deps.metrics.versionReroutes.inc();
      log.warn({ to: verdict.to, own: v.own }, 'step job reached a worker of another version; sent on');
      return 'rerouted';
    }
    const at = iso();
    // A plan followed over later steps has its approval in an earlier step: read it too (a move is rare).
    const planApproval = run.plan?.approvalId;
    const judged =
      planApproval && !approvals.some((a) => a.id === planApproval)
        ? [...approvals, ...(await deps.store.approvalsById([planApproval])).filter((a) => a !== null)]
        : approvals;
    const withdrawn = withdrawnOnMove(run, judged, deps.tools, at);
    await applier.apply(run, {
      kind: 'upgrade',
      change: moveRun(run, v.own, withdrawn, at),
      followUps: { feed: withdrawn.map((a) => approvalEvent(a, true)) },
    });
    log.info({ to: v.own, withdrawn: withdrawn.map((a) => a.id) }, 'run moved to another app version');
    return 'moved';
  }

  async function attempt(job: StepJob): Promise<StepOutcome> {
    // A job that names the run's tenant has its quota read beside the run (another slot, same round trip).
    const quota = job.tenantId ? deps.quotas.usageRead(job.tenantId) : undefined;
    const read = await deps.store.readStep(job.runId, job.step, quota ? [quota.command] : []);
    const g = gate(read.run, job.step, read.approvals, read.decision, read.children);
    if (g.kind === 'skip' || !read.run) return 'skipped';
    let run = read.run;
    if (g.kind !== 'already_committed') {
      const placed = await placeRun(run, read.approvals);
      if (placed === 'rerouted') return 'rerouted';
      if (placed === 'moved') return attempt(job); // read again, as the new version's
    }
    if (g.kind === 'already_committed') {
      await applier.ensureNext(run);
      return 'already_committed';
    }
    if (g.kind === 'parked') {
      await applier.ensureNext(run, read.approvals);
      return 'skipped';
    }
    const log = deps.logger.child({
      runId: run.id,
      traceId: run.traceId,
      step: run.step,
      tenantId: run.tenantId,
      ...(run.appVersion ? { appVersion: run.appVersion } : {}),
    });
    // A replay runs its agent with the instructions and model it overrides.
    const profile = replayProfile(run, deps.agents.get(run.agent));
    let decision: Decision;
    // Known when this attempt made the decision (read with its journal write); else each tool reads its own.
    let breakerStates: BreakerStates | undefined;
    if (g.kind === 'act') decision = g.decision;
    else {
      const quotaExhausted =
        quota && job.tenantId === run.tenantId ? quota.exhausted(read.reads[0]) : await deps.quotas.exhausted(run.tenantId);
      // A run of a tree is bounded by its ancestors too: it ends with them, and spends within what each has left.
      const ancestors = await deps.store.treeNodes(run.ancestors ?? []);
      const ended = ancestors.find((a) => !a.run || TERMINAL_STATUSES.includes(a.run.status));
      if (ended) return cancelled(run, `run:${ended.id}`, log);
      const bounds = (r: RunRecord) => [
        ...(read.descendants.length ? [{ limits: r.limits, spent: treeTotal(r, read.descendants) }] : []),
        ...ancestors.map((a) => ({ limits: (a.run as RunRecord).limits, spent: treeTotal(a.run as RunRecord, a.descendants) })),
      ];
      // `onBudget: 'ask'`: a run out of budget asks a person; a granted ask raises its limits first.
      const verdictOf = (r: RunRecord, exhausted: RunReason | null) =>
        budgetVerdict(r, read.approvals, exhausted, profile.onBudget === 'ask', now(), deps.approvalTtlMs, deps.budgetFourEyes);
      const budgetFacts = { now: now(), quotaExhausted, waitingOn: read.waitingOn };
      let budget = boundedByTree(run, bounds(run));
      let verdict = verdictOf(run, exhaustedBudget(budget, budgetFacts));
      if (verdict.kind === 'raise') {
        run = await applier.apply(run, {
          kind: 'raise',
          change: raiseBudget(run, raisedLimits(run.limits, verdict.raise), now()),
          followUps: {},
        });
        budget = boundedByTree(run, bounds(run));
        verdict = verdictOf(run, exhaustedBudget(budget, budgetFacts));
      }
      if (verdict.kind === 'ask') return applied(run, askForBudget(run, verdict.approval, verdict.reason, iso()), log);
      if (verdict.kind === 'fail') {
        return applied(
          run,
          failRun(run, verdict.reason, deps.agents.handoffAnswer(run.agent), mask, iso(), {
            level: 'info',
            msg: 'budget exhausted before the model call',
            fields: { reason: verdict.reason },
          }),
          log,
        );
      }
      if (run.step === 0) {
        const verdict = deps.inputFilter(run.input);
        if (!verdict.ok) {
          return applied(
            run,
            failRun(run, 'input_rejected', verdict.answer, mask, iso(), {
              level: 'warn',
              msg: 'input rejected before any model call',
              fields: { rule: verdict.ruleId, kind: verdict.kind },
            }),
            log,
          );
        }
      }
      if (run.status === 'queued') run = await applier.apply(run, { kind: 'start', change: startRun(run, iso()) });
      // A live-only event: sent without waiting for its reply (the connection keeps it in order).
      deps.store
        .appendEvent(runEvent('step.started', run.id, run.step))
        .catch((err: Error) => log.warn({ err: err.message }, 'step.started not written'));
      const made = await decide(run, profile, read.messages, log, { ...run, limits: budget.limits });
      if (!made) {
        const short = verdictOf(run, 'token_budget');
        if (short.kind === 'ask') return applied(run, askForBudget(run, short.approval, short.reason, iso()), log);
        return applied(
          run,
          failRun(run, 'token_budget', deps.agents.handoffAnswer(run.agent), mask, iso(), {
            level: 'info',
            msg: 'the next prompt does not fit the token budget; not calling the model',
          }),
          log,
        );
      }
      decision = made.decision;
      run = made.run;
      breakerStates = made.breakerStates;
    }
    // A step's duration is its model call (journaled) plus what happens from here on.
    return act(run, profile, decision, read.approvals, log, performance.now(), breakerStates);
  }

  /** A read tool asked again with the same arguments is answered from its earlier result. */
  async function fromEarlier(runId: string, [step, id]: EarlierCall, callId: string): Promise<ToolCallResult | null> {
    const earlier = (await deps.store.stepRecord(runId, step))?.toolCalls.find((r) => r.id === id);
    return earlier ? { record: { ...earlier, id: callId, durationMs: 0, fromSnapshot: true } } : null;
  }

  /** Acts on the step's decision: answer, or run its tool calls; the policy says what follows. */
  async function act(
    run: RunRecord,
    profile: AgentProfile,
    journaled: Decision,
    approvals: Approval[],
    log: Logger,
    started: number,
    breakerStates?: BreakerStates,
  ): Promise<StepOutcome> {
    // Every call of the step has an id of its own before anything runs (the ledger key, the approval, the result message).
    const decision = { ...journaled, toolCalls: distinctCallIds(journaled.toolCalls) };
    // A run's first step has no earlier steps; runs committed before the guard was kept on them rebuild it once from theirs.
    const guard = run.guard ?? guardFromHistory(run.step === 0 ? [] : (await deps.store.steps(run.id)).filter((s) => s.index < run.step));
    const facts = (): StepFacts => ({
      run,
      decision,
      guard,
      limits: deps.guards,
      prices: deps.prices,
      mask,
      handoff: deps.agents.handoffAnswer(run.agent),
      now: now(),
      durationMs: performance.now() - started + decision.durationMs,
      ...(profile.context ? { context: profile.context } : {}),
      ...(profile.output ? { output: profile.output } : {}),
      limitsOf: (agent) => (deps.agents.has(agent) ? deps.agents.get(agent).limits : undefined),
    });
    if (profile.plan && isPlanning(profile.plan, run)) {
      const outcome = planOutcome({
        run,
        content: decision.content,
        tools: toolsOf(profile),
        options: profile.plan,
        approvals,
        now: now(),
        approvalTtlMs: deps.approvalTtlMs,
      });
      return applied(run, afterPlan(facts(), outcome), log);
    }
    const first = afterDecision(facts());
    if (first.kind !== 'tools') return applied(run, first, log);
    const planned = planCalls({
      run,
      profile,
      tools: deps.tools,
      calls: decision.toolCalls,
      approvals,
      now: now(),
      approvalTtlMs: deps.approvalTtlMs,
      ...(deps.escalation ? { escalation: deps.escalation } : {}),
      ...(deps.delegation ? { delegation: deps.delegation } : {}),
    });
    // A replay's calls get what its original recorded (engine/replay-policy.ts): none reaches the world.
    const replayed = run.mode === 'replay' ? replayStep(run, planned, await recordingFor(run)) : undefined;
    const results = await runCalls(run, planned, first.earlier, breakerStates, afterReply(facts()), replayed?.verdicts);
    const records: ToolCallRecord[] = results.map((r) => r.record);
    const newApprovals = results.flatMap((r) => (r.newApproval ? [r.newApproval] : []));
    const t = replayed?.stop ? replayStopped(facts(), records) : afterTools(facts(), records, newApprovals);
    return applyAfterTools(run, t, records, log);
  }

  /** The original's calls and approvals, as a replay matches its own calls against them. */
  async function recordingFor(run: RunRecord) {
    const original = run.replayOf ?? '';
    const [steps, approvals] = await Promise.all([deps.store.steps(original), deps.store.approvals(original)]);
    return recordingOf(steps, approvals);
  }

  /**
   * Runs the planned calls, at most toolConcurrency at a time; a read tool asked again with
   * the same arguments is answered from its earlier result instead. An uncertain effect is
   * told to the tenant's feed at once.
   */
  async function runCalls(
    run: RunRecord,
    planned: PlannedCall[],
    earlierCalls: ReadonlyMap<number, EarlierCall>,
    breakerStates?: BreakerStates,
    /** The run as its children see it: its step's reply paid for. */
    parent: RunRecord = run,
    /** A replay's verdicts, one per planned call: only a live read runs its tool. */
    replayed?: readonly ReplayVerdict[],
  ): Promise<ToolCallResult[]> {
    const limit = pLimit(deps.toolConcurrency);
    const siblings = planned.filter((p) => p.kind === 'spawn').length;
    const results = await Promise.all(
      planned.map(async (p, index): Promise<ToolCallResult> => {
        const verdict = replayed?.[index];
        if (verdict?.kind === 'record') return { record: verdict.record };
        if (verdict?.kind === 'live')
          return limit(async () => ({ record: { ...(await deps.executeTool(p, breakerStates)).record, source: 'live' as const } }));
        if (p.kind === 'transfer') return { record: transferRecord(p) };
        if (p.kind === 'spawn') {
          const spawn = deps.spawnChild;
          if (!spawn) {
            const observation = 'Not started: this process cannot start sub-agent runs.';
            return { record: { id: p.call.id, name: p.call.name, arguments: p.args, outcome: 'forbidden', observation, durationMs: 0 } };
          }
          return limit(() => toolSpan(p.call, undefined, () => spawn(parent, p, siblings)));
        }
        const earlier = earlierCalls.get(index);
        if (earlier && deps.tools.get(p.call.name)?.kind === 'read') {
          const answered = await fromEarlier(run.id, earlier, p.call.id);
          if (answered) return answered;
        }
        return limit(() => deps.executeTool(p, breakerStates));
      }),
    );
    for (const r of results.filter((x) => x.record.outcome === 'uncertain')) {
      await deps.feed.publish(run.tenantId, {
        type: 'effect.uncertain',
        runId: run.id,
        step: run.step,
        toolCallId: r.record.id,
        tool: r.record.name,
        at: iso(),
      });
    }
    return results;
  }

  /** A sub-agent's run inherits its ancestor's end: cancelled, its approvals withdrawn. */
  async function cancelled(run: RunRecord, by: string, log: Logger): Promise<StepOutcome> {
    const { change, withdrawn } = cancelRun(run, await deps.store.approvals(run.id), by, iso());
    await applier.apply(run, { kind: 'cancel', change, followUps: { feed: withdrawn.map((a) => approvalEvent(a, true)) } });
    log.info({ by }, 'sub-agent run cancelled: an ancestor ended');
    return 'finished';
  }

  /** Applies the step's conclusion after its calls ran. */
  async function applyAfterTools(run: RunRecord, t: Transition, records: ToolCallRecord[], log: Logger): Promise<StepOutcome> {
    try {
      return await applied(run, t, log);
    } catch (err) {
      // The run finished (cancelled, past its deadline) while its writes ran: the terminal commit dropped
      // the ledger, so what they did is recorded in the trace now, where the saga and the people find it.
      const wrote = records.some((r) => deps.tools.get(r.name)?.kind === 'write' && EFFECT_OUTCOMES.includes(r.outcome));
      if (err instanceof StaleStepError && wrote && t.change.step && (await applier.recordAfterFinish(run.id, t.change.step))) {
        log.warn({ step: run.step }, "tool calls recorded after the run's finish");
      }
      throw err;
    }
  }

  async function process(job: StepJob): Promise<StepOutcome> {
    try {
      return await attempt(job);
    } catch (err) {
      if (!(err instanceof StaleStepError)) throw err;
      // Someone else committed first (I2): just make sure the run moves on.
      deps.logger.info({ runId: job.runId, step: job.step }, 'step already committed by another attempt');
      const current = await deps.store.get(job.runId);
      if (current) await applier.ensureNext(current);
      return 'already_committed';
    }
  }

  /**
   * Ends a run that can no longer make progress (its step ran out of attempts, hit a
   * non-retryable error, or passed its deadline), so that nothing hangs (I9).
   */
  async function fail(
    runId: string,
    reason: RunReason,
    detail: string,
    onlyIf: (run: RunRecord) => boolean = () => true,
  ): Promise<boolean> {
    try {
      return await retryOnStale(async () => {
        const run = await deps.store.get(runId);
        if (!run || TERMINAL_STATUSES.includes(run.status) || !onlyIf(run)) return false;
        const log = deps.logger.child({ runId: run.id, traceId: run.traceId, step: run.step, tenantId: run.tenantId });
        const transition = failRun(run, reason, deps.agents.handoffAnswer(run.agent), mask, iso(), {
          level: 'warn',
          msg: 'run failed',
          fields: { reason, detail },
        });
        await applier.apply(run, { kind: 'step', transition: stamped(transition), log });
        return true;
      });
    } catch (err) {
      if (err instanceof StaleStepError) return false; // others keep moving it; they end it or we try again later
      throw err;
    }
  }

  return {
    process,
    fail,
    ensureNext: applier.ensureNext,
    deadlineReason: async (runId: string): Promise<RunReason> => deadlineReason(await deps.store.waitingOn(runId)),
  };
}

export type StepProcessor = ReturnType<typeof createStepProcessor>;
