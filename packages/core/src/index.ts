/**
 * `@rein/core`: what an app author and an embedder use — the definition API
 * (`defineTool`, `defineAgent`, `defineApp`, `ToolError`), the options the start functions
 * take, and the types they meet. Every name here is documented in README.md or docs/
 * (test/infra/public-index.test.ts checks it, and a ceiling of 60 on their count). What
 * Rein's own code needs beyond this is in one entry per importer, with no stability promise:
 * `@rein/core/worker`, `@rein/core/http` (the api and approver), `@rein/core/cli`, and
 * `@rein/core/internal` (tests). The HTTP contract's zod schemas are `@rein/contract`.
 */

export type { ApprovalView, Principal, Role, RunEvent, RunStatus, RunView, TypedRunEvent, WebhookPayload } from '@rein/contract';
export { verifyWebhook } from '@rein/contract';
export type { McpServerConfig, McpServers, McpToolOverride } from '@rein/define/internal';
export {
  type AgentDefinition,
  type AgentProfile,
  type App,
  type AppDefinition,
  type AppServices,
  type CompensateWith,
  type CompensationPolicy,
  defineAgent,
  defineApp,
  defineTool,
  type Tool,
  type ToolContext,
  type ToolDefinition,
} from '@rein/define/internal';
export type { RedisClient } from './adapters/redis/redis.js';
export type { ContextPolicy } from './policy/step/context-policy.js';
export type { PlanOptions } from './policy/step/plan.js';
export type { RunningService, ServiceOptions } from './process/service-lifecycle.js';
export { ConfigError, ReinError, ToolError } from './shared/errors.js';
export { type InputRules, inputRulesSchema } from './shared/guards/input-filter.js';
export { type PiiRules, piiRulesSchema } from './shared/guards/pii-masker.js';
export { appStateKey } from './shared/keys.js';
export type { Logger } from './shared/logger.js';
export { compileOptions, optionsFromEnv, type PartialReinOptions, type ReinOptions } from './shared/options.js';
