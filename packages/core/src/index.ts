export { AgentCatalog, type AgentProfile } from './agents/agent-profile.js';
export { orderAssistant } from './agents/order-assistant.js';
export { stricterOf, verifyBinding } from './approvals/approval-binding.js';
export { type ApprovalService, createApprovalService, type Decision as ApprovalDecision } from './approvals/approval-service.js';
export { type DecisionRights, decisionRights, holdsRole, mayDecide, ROLE_RANK } from './approvals/decision-rights.js';
export { costOf } from './budgets/cost.js';
export { QuotaExceededError, TenantQuotas } from './budgets/tenant-quotas.js';
export { estimatePromptTokens } from './budgets/token-estimator.js';
export { type Config, configSchema, loadConfig, loadConfigOrExit, requireApiKeys, workerShards } from './config.js';
export { DemoStore, type Email, type Order, type Refund, type Ticket } from './demo/demo-store.js';
export { createDemoTools } from './demo/demo-tools.js';
export { PolicySearch, tokenize } from './demo/policy-search.js';
export { sweepDeadlines } from './engine/deadline-sweeper.js';
export { checkRepeats, failingTool } from './engine/loop-guard.js';
export { type ReaperDeps, reap } from './engine/reaper.js';
export { createStepProcessor, FALLBACK_ANSWER, type GuardLimits, type StepOutcome, type StepProcessor } from './engine/step-processor.js';
export { approvalId, createToolExecutor, type ToolExecutor } from './engine/tool-executor.js';
export { toolMessageContent, truncateObservation } from './engine/tool-observation.js';
export {
  BreakerOpenError,
  BulkheadFullError,
  ConfigError,
  ConflictError,
  ForbiddenError,
  GoneError,
  InvalidRequestError,
  ModelReplyInvalidError,
  ModelUnavailableError,
  NotFoundError,
  ReinError,
  StaleStepError,
  TooManyStreamsError,
  UnauthorizedError,
} from './errors.js';
export { createInputFilter, type InputFilter, loadInputRules } from './guards/input-filter.js';
export { createPiiMasker, loadPiiRules, type PiiMasker } from './guards/pii-masker.js';
export { createHttpApp, findApiKey, idParamsSchema, parseInput } from './http/http-app.js';
export { runHttpService } from './http/run-http-service.js';
export { createServiceApp } from './http/service-app.js';
export { EventStreams, lastEventId, type SseEntry, type SseSource } from './http/sse.js';
export { QUEUE_PREFIX, queuePrefix, runKeys, tenantKeys } from './keys.js';
export { createLogger, type Logger } from './logger.js';
export { createMetrics, type Metrics, registerQueueDepth } from './metrics.js';
export { type CompleteWith, createOpenAICompletion, type ModelGateway, type ModelReply, type ModelRequest } from './model/model-gateway.js';
export {
  type CancelExpiry,
  DEADLINE_SWEEP,
  type Enqueue,
  type ExpireJob,
  expireJobSchema,
  type JobName,
  jobCatalog,
  parseJob,
  REAPER,
  type RepairJob,
  repairJobSchema,
  STEP_QUEUE,
  type StepJob,
  StepScheduler,
  shardOf,
  stepJobOptions,
  stepQueue,
} from './queue/job-catalog.js';
export {
  bullConnection,
  checkRedisSettings,
  connectRedis,
  createRedisClient,
  isCluster,
  type RedisClient,
  type RedisRole,
  type RedisSettings,
  redisOptions,
} from './redis.js';
export { Bulkhead } from './resilience/bulkhead.js';
export { type BreakerOptions, CircuitBreakers } from './resilience/circuit-breakers.js';
export { FAULTS_KEY, withFaultInjection } from './resilience/fault-injection.js';
export { FleetLimit } from './resilience/fleet-limit.js';
export { createResilientModelGateway, type ModelProtection } from './resilience/resilient-model.js';
export { approvalView, createRunService, type LimitCeilings, type RunService, type RunView, runView } from './runs/run-service.js';
export { createRuntime, type Runtime, type RuntimeExtensions } from './runtime.js';
export { listRunsQuerySchema, type SubmitRunBody, submitRunBodySchema } from './schemas/api.js';
export {
  type Approval,
  type ApprovalStatus,
  approvalSchema,
  approvalStatusSchema,
  approveBodySchema,
  rejectBodySchema,
} from './schemas/approval.js';
export { type RunEvent, runEventSchema } from './schemas/event.js';
export { type ApiKey, apiKeySchema, type Principal, principalSchema, type Role, roleSchema } from './schemas/identity.js';
export { type ChatMessage, chatMessageSchema, type ModelToolCall } from './schemas/message.js';
export {
  type Decision,
  decisionSchema,
  type RunReason,
  type RunRecord,
  type RunStatus,
  runRecordSchema,
  runStatusSchema,
  type Snapshot,
  type StepRecord,
  snapshotSchema,
  stepRecordSchema,
  TERMINAL_STATUSES,
} from './schemas/run.js';
export { ApprovalFeed, type ApprovalFeedEvent, approvalFeedEventSchema } from './store/approval-feed.js';
export { DecisionJournal } from './store/decision-journal.js';
export { EffectLedger, idempotencyKey } from './store/effect-ledger.js';
export { RunStore } from './store/run-store.js';
export { StreamHub, streamIdAfter } from './store/stream-hub.js';
export { canonicalJson, hashArguments } from './tools/argument-hash.js';
export { defineTool, parseToolArguments, type Tool, type ToolContext, toolSpec } from './tools/tool.js';
