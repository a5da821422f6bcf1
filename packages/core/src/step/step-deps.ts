import type { AgentCatalog, Tool } from '@rein/define/internal';
import type { ModelGateway } from '../adapters/model/model-gateway.js';
import type { Enqueue } from '../adapters/queue/job-catalog.js';
import type { ApprovalFeed } from '../adapters/redis/approval-feed.js';
import type { DecisionJournal } from '../adapters/redis/decision-journal.js';
import type { TenantQuotas } from '../adapters/redis/tenant-quotas.js';
import type { FleetVersions } from '../policy/app/fleet-versions.js';
import type { EscalationDefaults } from '../policy/approvals/escalation.js';
import type { RunRepository } from '../policy/ports/run-repository.js';
import type { TurnJournal } from '../policy/ports/turn-journal.js';
import type { DelegationLimits } from '../policy/step/call-plan.js';
import type { GuardLimits } from '../policy/step/step-policy.js';
import type { Price } from '../shared/config.js';
import type { InputFilter } from '../shared/guards/input-filter.js';
import type { PiiMasker } from '../shared/guards/pii-masker.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';
import type { TransitionApplier } from './apply-transition.js';
import type { SpawnChild } from './child-runs.js';
import type { ToolExecutor } from './tool-executor.js';

export type { GuardLimits } from '../policy/step/step-policy.js';

/** What a step needs from its process; each phase takes the slice it uses. */
export interface StepProcessorDeps {
  store: RunRepository & TurnJournal;
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
  /** Starts `call_<agent>` children (step/child-runs.ts); absent, sub-agent calls are refused. */
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

/** The clock every phase of one processor reads. */
export interface StepClock {
  now(): number;
  iso(): string;
}

export const stepClock = (now: () => number = Date.now): StepClock => ({ now, iso: () => new Date(now()).toISOString() });

/** A run's logger, with the fields every line of its step carries. */
export const runLogger = (logger: Logger, run: { id: string; traceId: string; step: number; tenantId: string; appVersion?: string }) =>
  logger.child({
    runId: run.id,
    traceId: run.traceId,
    step: run.step,
    tenantId: run.tenantId,
    ...(run.appVersion ? { appVersion: run.appVersion } : {}),
  });
