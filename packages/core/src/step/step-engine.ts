import type { AgentCatalog, Tool } from '@rein/define/internal';
import type { ModelGateway } from '../adapters/model/model-gateway.js';
import type { Enqueue } from '../adapters/queue/job-catalog.js';
import type { ApprovalFeed } from '../adapters/redis/approval-feed.js';
import type { DecisionJournal } from '../adapters/redis/decision-journal.js';
import type { TenantQuotas } from '../adapters/redis/tenant-quotas.js';
import type { VersionDirectory } from '../adapters/redis/version-directory.js';
import { Bulkhead } from '../adapters/resilience/bulkhead.js';
import type { CircuitBreakers } from '../adapters/resilience/circuit-breakers.js';
import type { CaptureContent } from '../adapters/tracing/genai.js';
import type { EffectLedger } from '../policy/ports/effect-ledger.js';
import type { RunRepository } from '../policy/ports/run-repository.js';
import type { TurnJournal } from '../policy/ports/turn-journal.js';
import type { DelegationLimits } from '../policy/step/call-plan.js';
import type { InputFilter } from '../shared/guards/input-filter.js';
import type { PiiMasker } from '../shared/guards/pii-masker.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';
import type { ReinOptions } from '../shared/options.js';
import type { TransitionApplier } from './apply-transition.js';
import type { SpawnChild } from './child-runs.js';
import type { StepVersions } from './step-deps.js';
import { createStepProcessor } from './step-processor.js';
import { createToolExecutor } from './tool-executor.js';

/**
 * What the step engine takes from its process's runtime (process/runtime.ts builds it; the
 * engine tests build the same slice over a real Redis).
 */
export interface StepEngineRuntime {
  options: Pick<ReinOptions, 'model' | 'tools' | 'limits' | 'approvals' | 'resilience'>;
  store: RunRepository & TurnJournal;
  applier: TransitionApplier;
  feed: ApprovalFeed;
  journal: DecisionJournal;
  ledger: EffectLedger;
  enqueue: Enqueue;
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  quotas: TenantQuotas;
  inputFilter: InputFilter;
  masker: PiiMasker;
  metrics: Metrics;
  logger: Logger;
  spawnChild: SpawnChild;
  delegation: DelegationLimits;
  /** The app version this process runs and the fleet's; absent (engine tests), every run is this process's. */
  version?: string;
  versions?: VersionDirectory;
  /** Tool content on spans, when the operator opted in. */
  tracing?: { capture?: CaptureContent };
  /** Present in the workers: each tool dependency runs behind its breaker and a process bulkhead. */
  breakers?: CircuitBreakers;
}

/** What a caller sets beside the runtime: the model, and for tests a clock or a fleet view of their own. */
export interface StepEngineOverrides {
  model: ModelGateway;
  now?: () => number;
  versions?: StepVersions;
}

/**
 * The step engine, assembled in one place for the workers and the engine tests: the tool
 * executor (guarded by breakers and bulkheads where the runtime has breakers) and the step
 * processor over it, configured from the runtime's options.
 */
export function createStepEngine(rt: StepEngineRuntime, overrides: StepEngineOverrides) {
  const { tools, model, limits, approvals, resilience } = rt.options;
  const clock = overrides.now ? { now: overrides.now } : {};
  const executeTool = createToolExecutor({
    ledger: rt.ledger,
    metrics: rt.metrics,
    logger: rt.logger,
    toolTimeoutMs: tools.timeoutMs,
    maxResultBytes: tools.maxResultBytes,
    ...(rt.tracing?.capture ? { captureContent: rt.tracing.capture } : {}),
    ...(rt.breakers
      ? {
          protection: {
            breakers: rt.breakers,
            bulkhead: processBulkheads(rt.metrics, tools.processConcurrency, resilience.bulkheadWaitMs),
          },
        }
      : {}),
    ...clock,
  });
  const versions = overrides.versions ?? fleetOf(rt);
  const steps = createStepProcessor({
    store: rt.store,
    applier: rt.applier,
    feed: rt.feed,
    journal: rt.journal,
    model: overrides.model,
    modelName: model.name,
    tools: rt.tools,
    agents: rt.agents,
    executeTool,
    quotas: rt.quotas,
    prices: model.prices,
    inputFilter: rt.inputFilter,
    masker: rt.masker,
    guards: {
      repeatLimit: limits.repeatLimit,
      toolFailureLimit: tools.failureLimit,
      toolResultMaxChars: tools.resultMaxChars,
    },
    metrics: rt.metrics,
    logger: rt.logger,
    toolConcurrency: tools.concurrency,
    modelTimeoutMs: model.timeoutMs,
    modelIdleTimeoutMs: model.idleTimeoutMs,
    approvalTtlMs: approvals.ttlMs,
    budgetFourEyes: approvals.budgetFourEyes,
    escalation: approvals.escalation,
    spawnChild: rt.spawnChild,
    delegation: rt.delegation,
    ...(versions ? { versions } : {}),
    ...clock,
  });
  return { steps, executeTool };
}

export type StepEngine = ReturnType<typeof createStepEngine>;

/** The fleet as the runtime's version directory sees it. */
function fleetOf(rt: StepEngineRuntime): StepVersions | undefined {
  const { version, versions } = rt;
  if (version === undefined || !versions) return undefined;
  return { own: version, known: () => versions.known(), fresh: () => versions.fresh(), enqueue: rt.enqueue };
}

/** One bulkhead per tool dependency, shared by every step of the process, created on first use. */
function processBulkheads(metrics: Metrics, concurrency: number, waitMs: number): (dependency: string) => Bulkhead {
  const bulkheads = new Map<string, Bulkhead>();
  return (dependency) => {
    let b = bulkheads.get(dependency);
    if (!b) {
      b = new Bulkhead(dependency, concurrency, waitMs, (inFlight, rejected) => {
        metrics.bulkheadInFlight.set({ dependency }, inFlight);
        if (rejected) metrics.bulkheadRejections.inc({ dependency, scope: 'process' });
      });
      bulkheads.set(dependency, b);
    }
    return b;
  };
}
