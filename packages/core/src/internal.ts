/**
 * `@rein/core/internal`: what Rein's own services, CLI, tests and benches share beyond the
 * public index — the runtime, the step engine, the store, the queues, the HTTP shell.
 * INTERNAL: no stability promise; any name here may change or go in any release, without
 * notice. Apps and embedders use `@rein/core` (the definition API and options) and
 * `@rein/core/schemas` (the HTTP contract); see docs/design.md, "Public surface".
 */
export { AgentCatalog, HANDOFF_ANSWER } from '@rein/define/internal';
export { contentVersion, resolveAppVersion } from './app/app-version.js';
export { isApp } from '@rein/define/internal';
export type { FleetVersions } from './app/fleet-versions.js';
export { loadApp, loadAppOrExit } from './app/load-app.js';
export { createRegistry, type Registry } from './app/registry.js';
export { stricterOf, verifyBinding } from './approvals/approval-binding.js';
export { approvalId, runOfApproval } from './approvals/approval-id.js';
export { type ApprovalLinks, createApprovalLinks, type LinkPreview } from './approvals/approval-links.js';
export {
  type ApprovalService,
  createApprovalService,
  type Decision as ApprovalDecision,
  type Decision as ApprovalVerdict,
} from './approvals/approval-service.js';
export { createDecisionLog } from './approvals/decision-log.js';
export {
  type DecisionRights,
  decisionRights,
  holdsRole,
  isOperator,
  mayDecide,
  mayReadRun,
  ROLE_RANK,
} from './approvals/decision-rights.js';
export { feedVisibleTo, type RunOwners } from './approvals/feed-visibility.js';
export { linkSecret } from './approvals/link-token.js';
export { type ArchivePool, createArchivePool } from './archive/archive-pool.js';
export { ArchiveSchemaError, checkArchiveSchema, loadMigrations, migrateArchive } from './archive/migrations.js';
export { type ArchiveDoc, RunArchive } from './archive/run-archive.js';
export { costOf } from './budgets/cost.js';
export { QuotaExceededError, TenantQuotas } from './budgets/tenant-quotas.js';
export { estimatePromptTokens } from './budgets/token-estimator.js';
export { type Config, configSchema, loadConfig, loadConfigOrExit, requireApiKeys, workerShards } from './config.js';
export { createTransitionApplier, type FinishHooks, type Outcome, type TransitionApplier } from './engine/apply-transition.js';
export { type Compensator, compensationKey, createCompensator } from './engine/compensation.js';
export { compactHistory, observationContent, READ_RESULT_TOOL, resultHandle, structuredSummary } from './engine/context-policy.js';
export { sweepDeadlines } from './engine/deadline-sweeper.js';
export { advanceGuard, checkRepeats, failingTool, guardFromHistory } from './engine/loop-guard.js';
export { linkCallsToPlan, PLAN_APPROVAL, planResponseFormat, validatePlan } from './engine/plan.js';
export { type ReaperDeps, reap } from './engine/reaper.js';
export { retryOnStale } from './engine/run-transitions.js';
// StepEffect is the preferred name of Transition (what a step does to its run; see docs/design.md, glossary).
export type { GuardLimits, Transition as StepEffect, Transition } from './engine/step-policy.js';
// StepDisposition is the preferred name of StepOutcome (how handling one step job ended, a label).
export { createStepProcessor, type StepOutcome as StepDisposition, type StepOutcome, type StepProcessor } from './engine/step-processor.js';
export { createToolExecutor, type ToolExecutor } from './engine/tool-executor.js';
export { escapeMarkup, toolMessageContent, truncateObservation } from './engine/tool-observation.js';
export { capToolResult } from './engine/tool-result-cap.js';
export { currentVersion, routeVersion, versionVerdict, withdrawnOnMove } from './engine/version-route.js';
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
  StaleStepError,
  type StepFailure,
  ToolOutcomeUnknownError,
  TooManyStreamsError,
  terminalReason,
  UnauthorizedError,
} from './errors.js';
export { createInputFilter, type InputFilter, loadInputRules } from './guards/input-filter.js';
export { createPiiMasker, loadPiiRules, type PiiMasker } from './guards/pii-masker.js';
export { basicPassword, bearerToken, findApiKey, metricsAuthorized } from './http/credentials.js';
export { clientErrorHandler, type ErrorEnvelope, envelope, type PublicError, publicError } from './http/error-envelope.js';
export { createHttpApp, type HttpAppOptions, type HttpTimeouts, parseInput } from './http/http-app.js';
export { boundJsonDepth, jsonDepthExceeds, MAX_JSON_DEPTH } from './http/json-body.js';
export { OPENAPI_PATH } from './http/openapi.js';
export { apiRoutes, approverRoutes, idParamsSchema, versionParamsSchema } from './http/route-schemas.js';
export { closeOnSignals, exitOnStartError, runHttpService, serviceOptions } from './http/run-http-service.js';
export { type RunRoutesDeps, registerRunRoutes } from './http/run-routes.js';
export { createServiceApp } from './http/service-app.js';
export { EventStreams, lastEventId, type SseEntry, type SseSource, type StreamCaps, streamCaps } from './http/sse.js';
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
} from './keys.js';
export { createLogger } from './logger.js';
export { type McpGovernance, mcpGovernance } from './mcp/mcp-governance.js';
export { McpManager, type McpManagerDeps } from './mcp/mcp-manager.js';
export { mcpObservation } from './mcp/mcp-result.js';
export { mcpServerSchema, mcpServersSchema } from '@rein/define/internal';
export { createMcpTool } from './mcp/mcp-tool.js';
export { mcpToolName } from './mcp/mcp-tool-name.js';
export { createMetrics, type Metrics, registerQueueDepth, registerRedisUp, registerVersionGauges } from './metrics.js';
export {
  type CompleteWith,
  chatCompletionBody,
  createOpenAICompletion,
  type ModelDelta,
  type ModelGateway,
  type ModelReply,
  type ModelRequest,
} from './model/model-gateway.js';
export { createProviderCompletion } from './model/providers.js';
export { DEFAULT_PROVIDER, type Provider, parseModelId, providerSchema } from './provider-config.js';
export { loadOptionsOrExit } from './options.js';
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
  type JobRoute,
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
} from './queue/job-catalog.js';
export {
  failJob,
  InvalidJobError,
  type JobHandler,
  type JobTable,
  runJob,
  takeJob,
  type WorkerJobName,
  type WorkerJobPayload,
} from './queue/job-table.js';
export {
  type FireJob,
  fireJobSchema,
  fireTimeOf,
  SCHEDULE_FIRE,
  SCHEDULE_QUEUE,
  ScheduleQueue,
  type ScheduleTimers,
} from './queue/schedule-queue.js';
export {
  bullConnection,
  checkRedisSettings,
  connectRedis,
  createRedisClient,
  isCluster,
  type RedisRole,
  type RedisSettings,
  redisOptions,
} from './redis.js';
export { Bulkhead } from './resilience/bulkhead.js';
export { type BreakerOptions, CircuitBreakers } from './resilience/circuit-breakers.js';
export { withFaultInjection } from './resilience/fault-injection.js';
export { FleetLimit } from './resilience/fleet-limit.js';
export { createResilientModelGateway, type ModelProtection } from './resilience/resilient-model.js';
export { createFairShare, type FairShare } from './runs/fair-share.js';
export { createRunArchiving, type RunArchiving, retirable } from './runs/run-archiving.js';
export { approvalView, createRunService, type LimitCeilings, type RunService, runView } from './runs/run-service.js';
export { checkCron, isMissed, latestFireAt, nextFireAt, scheduledRunId } from './runs/schedule-cron.js';
export { createScheduleService, type FireResult, type ScheduleService } from './runs/schedule-service.js';
export { INTERRUPTED_TURN, type SessionSettings, sessionHistory } from './runs/session-history.js';
export { type AdmitResult, createSessionQueue, type SessionQueue } from './runs/session-queue.js';
export { createVersionService, type VersionService } from './runs/version-service.js';
export { createRuntime, createWorkerRuntime, type Runtime, type RuntimeOptions, type WorkerRuntime } from './runtime.js';
export { type Compensation, type CompensationStep, compensationSchema } from '@rein/contract';
export { type ChatMessage, chatMessageSchema, type ModelToolCall } from '@rein/contract';
export { ApprovalFeed } from './store/approval-feed.js';
export { AuditLog, auditHash, type ChainCheck, GENESIS_HASH, truncation, verifyAuditChain } from './store/audit-log.js';
export { DecisionJournal } from './store/decision-journal.js';
export { EffectLedger } from './store/effect-ledger.js';
export { idempotencyKey } from './engine/call-identity.js';
export { HotRuns, type RunSnapshot, revisionOf, sameRevision } from './store/hot-runs.js';
export { decodeCursor, encodeCursor, type PageCursor, pageIndexes } from './store/index-pager.js';
export { LinkUses } from './store/link-uses.js';
export { type RunFilter, RunStore } from './store/run-store.js';
export { SCHEDULE_HISTORY_SIZE, ScheduleStore } from './store/schedule-store.js';
export { StreamHub, streamIdAfter } from './store/stream-hub.js';
export { HEARTBEAT_TTL_MS, VersionDirectory, type VersionFacts } from './store/version-directory.js';
export { canonicalJson, hashArguments } from './tools/argument-hash.js';
export { parseToolArguments, toolSpec } from '@rein/define/internal';
export { toolDigest } from './tools/tool-digest.js';
export type { CaptureContent } from './tracing/genai.js';
export { REIN_ATTR, stepSpan, submitSpan } from './tracing/rein-spans.js';
export { parseTraceparent, traceparentSchema } from './tracing/trace-context.js';
export { setupTracing, type Tracing } from './tracing/tracing-setup.js';
export { isRefusedAddress, WebhookUrlRefusedError } from './webhooks/address-guard.js';
export { createWebhookDelivery, type WebhookDelivery, WebhookDeliveryFailedError } from './webhooks/webhook-delivery.js';
export {
  type DeliveryJob,
  deliveryJobSchema,
  WEBHOOK_ATTEMPTS,
  WEBHOOK_QUEUE,
  WebhookDispatcher,
  webhookRetryDelayMs,
} from './webhooks/webhook-dispatcher.js';
export { createWebhookService, MAX_WEBHOOKS_PER_TENANT, type WebhookService } from './webhooks/webhook-service.js';
export { DELIVERY_LOG_SIZE, WebhookStore } from './webhooks/webhook-store.js';
