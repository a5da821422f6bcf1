export { AgentCatalog, type AgentProfile } from './agents/agent-profile.js';
export { orderAssistant } from './agents/order-assistant.js';
export { approvalId, createToolExecutor, type ToolExecutor } from './engine/tool-executor.js';
export { createApprovalService, mayDecide, type ApprovalService, type Decision as ApprovalDecision } from './approvals/approval-service.js';
export { configSchema, loadConfig, loadConfigOrExit, requireApiKeys, type Config } from './config.js';
export { DemoStore, type Order, type Ticket, type Refund, type Email } from './demo/demo-store.js';
export { createDemoTools } from './demo/demo-tools.js';
export { PolicySearch, tokenize } from './demo/policy-search.js';
export { createStepProcessor, FALLBACK_ANSWER, type StepOutcome, type StepProcessor } from './engine/step-processor.js';
export {
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
  UnauthorizedError,
} from './errors.js';
export { createHttpApp, idParamsSchema, parseInput } from './http/http-app.js';
export { QUEUE_PREFIX, runKeys, tenantKeys } from './keys.js';
export { createLogger, type Logger } from './logger.js';
export { createMetrics, type Metrics } from './metrics.js';
export { createOpenAIGateway, type ModelGateway, type ModelReply, type ModelRequest } from './model/model-gateway.js';
export { jobCatalog, type JobName, parseJob, STEP_QUEUE, type StepJob, StepScheduler, stepJobOptions } from './queue/job-catalog.js';
export { bullConnection, connectRedis, redisOptions, type RedisRole } from './redis.js';
export { createRunService, runView, approvalView, type RunService, type RunView } from './runs/run-service.js';
export { createRuntime, type Runtime } from './runtime.js';
export { listRunsQuerySchema, submitRunBodySchema, type SubmitRunBody } from './schemas/api.js';
export { approvalSchema, approvalStatusSchema, approveBodySchema, rejectBodySchema, type Approval, type ApprovalStatus } from './schemas/approval.js';
export { runEventSchema, type RunEvent } from './schemas/event.js';
export { apiKeySchema, principalSchema, roleSchema, type ApiKey, type Principal, type Role } from './schemas/identity.js';
export { chatMessageSchema, type ChatMessage, type ModelToolCall } from './schemas/message.js';
export {
  decisionSchema,
  runRecordSchema,
  runStatusSchema,
  stepRecordSchema,
  TERMINAL_STATUSES,
  type Decision,
  type RunRecord,
  type RunStatus,
  type StepRecord,
} from './schemas/run.js';
export { DecisionJournal } from './store/decision-journal.js';
export { EffectLedger, idempotencyKey } from './store/effect-ledger.js';
export { RunStore } from './store/run-store.js';
export { defineTool, parseToolArguments, toolSpec, type Tool, type ToolContext } from './tools/tool.js';
export { runHttpService } from './http/run-http-service.js';
