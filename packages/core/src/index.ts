/**
 * `@rein/core`: what an app author and an embedder use — the definition API
 * (`defineTool`, `defineAgent`, `defineApp`, `ToolError`), the options the start functions
 * take, and the types they meet. Every name here is documented in README.md or docs/
 * (test/infra/public-index.test.ts checks it, and a ceiling of 60 on their count). What the
 * services, the CLI and the tests need beyond this is `@rein/core/internal`, with no
 * stability promise; the HTTP contract's zod schemas are `@rein/core/schemas`.
 */
export {
  type AgentDefinition,
  type AgentProfile,
  type CompensationPolicy,
  defineAgent,
} from './agents/agent-profile.js';
export { type App, type AppDefinition, type AppServices, defineApp } from './app/define-app.js';
export type { ContextPolicy } from './engine/context-policy.js';
export type { PlanOptions } from './engine/plan.js';
export { ConfigError, ReinError, ToolError } from './errors.js';
export { type InputRules, inputRulesSchema } from './guards/input-filter.js';
export { type PiiRules, piiRulesSchema } from './guards/pii-masker.js';
export type { RunningService, ServiceOptions } from './http/run-http-service.js';
export { appStateKey } from './keys.js';
export type { Logger } from './logger.js';
export type { McpServerConfig, McpServers, McpToolOverride } from './mcp/mcp-server-config.js';
export { compileOptions, optionsFromEnv, type PartialReinOptions, type ReinOptions } from './options.js';
export type { RedisClient } from './redis.js';
export type { RunEvent, TypedRunEvent } from './schemas/event.js';
export type { Principal, Role } from './schemas/identity.js';
export type { RunStatus } from './schemas/run.js';
export type { ApprovalView, RunView } from './schemas/views.js';
export type { WebhookPayload } from './schemas/webhook.js';
export { type CompensateWith, defineTool, type Tool, type ToolContext, type ToolDefinition } from './tools/tool.js';
export { verifyWebhook } from './webhooks/verify-webhook.js';
