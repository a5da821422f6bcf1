/**
 * `@rein/core/internal`: what Rein's own services, CLI, tests and benches share beyond the
 * public index — the runtime, the step engine, the store, the queues, the HTTP shell.
 * INTERNAL: no stability promise; any name here may change or go in any release, without
 * notice. Apps and embedders use `@rein/core` (the definition API and options) and
 * `@rein/core/schemas` (the HTTP contract); see docs/design.md, "Public surface".
 */

export {
  type ChatMessage,
  type Compensation,
  type CompensationStep,
  chatMessageSchema,
  compensationSchema,
  type ModelToolCall,
} from '@rein/contract';
export {
  AgentCatalog,
  HANDOFF_ANSWER,
  isApp,
  mcpServerSchema,
  mcpServersSchema,
  parseToolArguments,
  toolSpec,
} from '@rein/define/internal';
export { type McpGovernance, mcpGovernance } from './adapters/mcp/mcp-governance.js';
export { McpManager, type McpManagerDeps } from './adapters/mcp/mcp-manager.js';
export { mcpObservation } from './adapters/mcp/mcp-result.js';
export { createMcpTool } from './adapters/mcp/mcp-tool.js';
export { mcpToolName } from './adapters/mcp/mcp-tool-name.js';
export {
  type CompleteWith,
  chatCompletionBody,
  createOpenAICompletion,
  type ModelDelta,
  type ModelGateway,
  type ModelReply,
  type ModelRequest,
} from './adapters/model/model-gateway.js';
export { createProviderCompletion } from './adapters/model/providers.js';
export { AddressRefusedError, isRefusedAddress } from './adapters/net/address-guard.js';
export { type ArchivePool, createArchivePool } from './adapters/postgres/archive-pool.js';
export { ArchiveSchemaError, checkArchiveSchema, loadMigrations, migrateArchive } from './adapters/postgres/migrations.js';
export { PgItemStore } from './adapters/postgres/pg-item-store.js';
export { type ArchiveDoc, RunArchive } from './adapters/postgres/run-archive.js';
export {
  type AdmitJob,
  type ArchiveJob,
  AUDIT_CHECKPOINT,
  admitJobSchema,
  archiveJobSchema,
  type CancelExpiry,
  type CompensateJob,
  compensateJobSchema,
  DEADLINE_SWEEP,
  type Enqueue,
  type ExpireJob,
  expireJobSchema,
  HOUSEKEEPING_QUEUE,
  housekeepingJobSchema,
  type JobName,
  type JobPayloads,
  jobCatalog,
  jobRoute,
  REAPER,
  type RepairJob,
  repairJobSchema,
  type SlotJob,
  STEP_QUEUE,
  type StepJob,
  StepScheduler,
  shardOf,
  slotJobSchema,
  stepJobOptions,
  stepJobSchema,
  stepQueue,
  type WakeJob,
  wakeJobSchema,
} from './adapters/queue/job-catalog.js';
export {
  type Dequeued,
  failJob,
  InvalidJobError,
  type JobHandler,
  type JobHandlers,
  type JobTable,
  runJob,
  takeJob,
  UnrecoverableJobError,
  type WorkerJobName,
  type WorkerJobPayload,
} from './adapters/queue/job-table.js';
export {
  type FireJob,
  fireJobSchema,
  fireTimeOf,
  SCHEDULE_FIRE,
  SCHEDULE_QUEUE,
  ScheduleQueue,
  type ScheduleTimers,
} from './adapters/queue/schedule-queue.js';
export { ApprovalFeed } from './adapters/redis/approval-feed.js';
export { AuditLog } from './adapters/redis/audit-log.js';
export { DecisionJournal } from './adapters/redis/decision-journal.js';
export { RedisEffectLedger } from './adapters/redis/effect-ledger.js';
export { HotRuns, type RunSnapshot, revisionOf, sameRevision } from './adapters/redis/hot-runs.js';
export { RedisIdempotencyKeys } from './adapters/redis/idempotency-keys.js';
export { decodeCursor, encodeCursor, pageIndexes } from './adapters/redis/index-pager.js';
export { LinkUses } from './adapters/redis/link-uses.js';
export {
  bullConnection,
  checkRedisSettings,
  connectRedis,
  createRedisClient,
  isCluster,
  type RedisRole,
  type RedisSettings,
  redisOptions,
} from './adapters/redis/redis.js';
export { RedisItemStore } from './adapters/redis/redis-item-store.js';
export { RunStore } from './adapters/redis/run-store.js';
export { SCHEDULE_HISTORY_SIZE, ScheduleStore } from './adapters/redis/schedule-store.js';
export { RedisSessions } from './adapters/redis/session-store.js';
export { SignInStore } from './adapters/redis/sign-in-store.js';
export { StreamHub, streamIdAfter } from './adapters/redis/stream-hub.js';
export { TenantQuotas } from './adapters/redis/tenant-quotas.js';
export { HEARTBEAT_TTL_MS, VersionDirectory, type VersionFacts } from './adapters/redis/version-directory.js';
export { Bulkhead } from './adapters/resilience/bulkhead.js';
export { type BreakerOptions, CircuitBreakers } from './adapters/resilience/circuit-breakers.js';
export { withFaultInjection } from './adapters/resilience/fault-injection.js';
export { FleetLimit } from './adapters/resilience/fleet-limit.js';
export { createResilientModelGateway, type ModelProtection } from './adapters/resilience/resilient-model.js';
export type { CaptureContent } from './adapters/tracing/genai.js';
export { REIN_ATTR, stepSpan, submitSpan } from './adapters/tracing/rein-spans.js';
export { parseTraceparent, traceparentSchema } from './adapters/tracing/trace-context.js';
export { setupTracing, type Tracing } from './adapters/tracing/tracing-setup.js';
export { type A2aService, createA2aService } from './features/a2a/a2a-service.js';
export { type ApprovalLinks, createApprovalLinks, type LinkPreview } from './features/approvals/approval-links.js';
export {
  type ApprovalService,
  createApprovalService,
  type Decision as ApprovalDecision,
  type Decision as ApprovalVerdict,
} from './features/approvals/approval-service.js';
export { createDecisionLog } from './features/approvals/decision-log.js';
export { feedVisibleTo, type RunOwners } from './features/approvals/feed-visibility.js';
export { createRunArchiving, type RunArchiving, retirable } from './features/archive/run-archiving.js';
export { type Compensator, compensationKey, createCompensator } from './features/compensation/compensation.js';
export { type ReaperDeps, reap } from './features/housekeeping/reaper.js';
export { oidcVerifierFrom } from './features/identity/company-sign-in.js';
export { createOidcVerifier, type Discovery, type OidcVerifier, type OidcVerifierOptions } from './features/identity/oidc-verifier.js';
export { createLangGraphService, type LangGraphService, NotServedError } from './features/langgraph/langgraph-service.js';
export * as lgSchemas from './features/langgraph/lg-schemas.js';
export { ThreadStore } from './features/langgraph/thread-store.js';
export { createMcpDoor, type McpDoor } from './features/mcp-door/mcp-door.js';
export { createFairShare, type FairShare } from './features/runs/fair-share.js';
export { approvalView, createRunService, type LimitCeilings, type RunService, runView } from './features/runs/run-service.js';
export { INTERRUPTED_TURN, type SessionSettings, sessionHistory } from './features/runs/session-history.js';
export { type AdmitResult, createSessionQueue, type SessionQueue } from './features/runs/session-queue.js';
export { createScheduleService, type FireResult, type ScheduleService } from './features/schedules/schedule-service.js';
export { createStoreService, type ItemView, type StoreService } from './features/store/store-service.js';
export { createVersionImpact, type VersionImpactCheck, VersionNotRegisteredError } from './features/versions/version-impact.js';
export { createVersionService, type VersionService } from './features/versions/version-service.js';
export { createWebhookDelivery, type WebhookDelivery, WebhookDeliveryFailedError } from './features/webhooks/webhook-delivery.js';
export {
  type DeliveryJob,
  deliveryJobSchema,
  WEBHOOK_ATTEMPTS,
  WEBHOOK_QUEUE,
  WebhookDispatcher,
  webhookRetryDelayMs,
} from './features/webhooks/webhook-dispatcher.js';
export { createWebhookService, MAX_WEBHOOKS_PER_TENANT, type WebhookService } from './features/webhooks/webhook-service.js';
export { DELIVERY_LOG_SIZE, WebhookStore } from './features/webhooks/webhook-store.js';
export { basicPassword, bearerToken, findApiKey, metricsAuthorized } from './http/credentials.js';
export { clientErrorHandler, type ErrorEnvelope, envelope, type PublicError, publicError } from './http/error-envelope.js';
export { contentVersion, resolveAppVersion } from './policy/app/app-version.js';
export { canonicalJson, hashArguments } from './policy/app/argument-hash.js';
export type { FleetVersions } from './policy/app/fleet-versions.js';
export { toolDigest } from './policy/app/tool-digest.js';
export { agentDigest, manifestOf } from './policy/app/version-manifest.js';
export { stricterOf, verifyBinding } from './policy/approvals/approval-binding.js';
export { approvalContext } from './policy/approvals/approval-context.js';
export { approvalId, runOfApproval } from './policy/approvals/approval-id.js';
export {
  type DecisionRights,
  decisionRights,
  holdsRole,
  isOperator,
  mayDecide,
  mayReadRun,
  ROLE_RANK,
} from './policy/approvals/decision-rights.js';
export { linkSecret } from './policy/approvals/link-token.js';
export { auditHash, type ChainCheck, GENESIS_HASH, truncation, verifyAuditChain } from './policy/audit/audit-chain.js';
export {
  type AuditSigner,
  createAuditSigner,
  keyIdOf,
  type Verdict,
  verifyCheckpoint,
  verifyLogAgainstCheckpoint,
  verifyReceipt,
} from './policy/audit/receipts.js';
export { costOf } from './policy/budget/cost.js';
export { estimatePromptTokens } from './policy/budget/token-estimator.js';
export { type ClaimMapping, claimAt, principalFromClaims } from './policy/identity/token-claims.js';
export type { StreamMode as LgStreamMode } from './policy/langgraph/lg-stream.js';
export type { EffectLedger, LedgerScope } from './policy/ports/effect-ledger.js';
export type { IdempotencyKeys } from './policy/ports/idempotency-keys.js';
export type { EnqueueOptions, ExpiryTimer, JobQueue, JobRoute } from './policy/ports/job-queue.js';
export type { Page, PageCursor, PageQuery } from './policy/ports/pages.js';
export type { ChildEntry, RunFilter, RunRepository, StepRead, StoredEvent, TreeNodeRead } from './policy/ports/run-repository.js';
export type { SessionRegistry } from './policy/ports/session-registry.js';
export type { TurnJournal } from './policy/ports/turn-journal.js';
export { retryOnStale } from './policy/run/run-transitions.js';
export { checkCron, isMissed, latestFireAt, nextFireAt, scheduledRunId } from './policy/run/schedule-cron.js';
export { currentVersion, routeVersion, versionVerdict, withdrawnOnMove } from './policy/run/version-route.js';
export { idempotencyKey } from './policy/step/call-identity.js';
export { compactHistory, observationContent, READ_RESULT_TOOL, resultHandle, structuredSummary } from './policy/step/context-policy.js';
export { advanceGuard, checkRepeats, failingTool, guardFromHistory } from './policy/step/loop-guard.js';
export { linkCallsToPlan, PLAN_APPROVAL, planResponseFormat, validatePlan } from './policy/step/plan.js';
// StepEffect is the preferred name of Transition (what a step does to its run; see docs/design.md, glossary).
export type { GuardLimits, Transition as StepEffect, Transition } from './policy/step/step-policy.js';
export { escapeMarkup, toolMessageContent, truncateObservation } from './policy/step/tool-observation.js';
export { capToolResult } from './policy/step/tool-result-cap.js';
export type { ItemStore, StoredItem } from './policy/store/store-items.js';
export { loadApp, loadAppOrExit } from './process/load-app.js';
export { createRegistry, type Registry } from './process/registry.js';
export { createRuntime, createWorkerRuntime, type Runtime, type RuntimeOptions, type WorkerRuntime } from './process/runtime.js';
export { closeOnSignals, exitOnStartError, type RunningService, type ServiceOptions, serviceOptions } from './process/service-lifecycle.js';
export { workerJobs } from './process/worker-jobs.js';
export { type Config, configSchema, loadConfig, loadConfigOrExit, requireCredentials, workerShards } from './shared/config.js';
export {
  ArchiveUnavailableError,
  BreakerOpenError,
  BulkheadFullError,
  ConflictError,
  ForbiddenError,
  GoneError,
  IdempotencyKeyReusedError,
  InvalidRequestError,
  isDelaying,
  McpServerStartError,
  McpToolError,
  McpUnavailableError,
  ModelRejectedError,
  ModelReplyInvalidError,
  ModelUnavailableError,
  NotFoundError,
  QuotaExceededError,
  RedisUnavailableError,
  StaleStepError,
  type StepFailure,
  ToolOutcomeUnknownError,
  TooManyStreamsError,
  terminalReason,
  UnauthorizedError,
} from './shared/errors.js';
export { createInputFilter, type InputFilter, loadInputRules } from './shared/guards/input-filter.js';
export { createPiiMasker, loadPiiRules, type PiiMasker } from './shared/guards/pii-masker.js';
export {
  ARCHIVE_BACKLOG_KEY,
  ARCHIVE_HOT_KEY,
  FAULTS_KEY,
  QUEUE_PREFIX,
  queuePrefix,
  runKeys,
  SCHEDULE_QUEUE_PREFIX,
  scheduleKeys,
  stepQueuePrefix,
  tenantKeys,
  VERSION_KEYS,
  versionRunsKey,
  WEBHOOK_QUEUE_PREFIX,
} from './shared/keys.js';
export { createLogger } from './shared/logger.js';
export { createMetrics, type Metrics, registerQueueDepth, registerRedisUp, registerVersionGauges } from './shared/metrics.js';
export { loadOptionsOrExit } from './shared/options.js';
export { DEFAULT_PROVIDER, type Provider, parseModelId, providerSchema } from './shared/provider-config.js';
export { createTransitionApplier, type FinishHooks, type Outcome, type TransitionApplier } from './step/apply-transition.js';
// StepDisposition is the preferred name of StepOutcome (how handling one step job ended, a label).
export { createStepEngine, type StepEngine, type StepEngineRuntime } from './step/step-engine.js';
export { backoffMs } from './step/step-jobs.js';
export type { StepOutcome as StepDisposition, StepOutcome, StepProcessor } from './step/step-processor.js';
export type { ToolExecutor } from './step/tool-executor.js';
