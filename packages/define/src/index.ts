/**
 * `@rein/define`: the definition API of a Rein app — `defineTool`, `defineAgent`,
 * `defineApp`, `ToolError` — and the option schemas they check, with no server code (it
 * depends on `@rein/contract` and zod only). `@rein/core` re-exports all of it; what the
 * server needs beyond it (the registry's checks, the catalog) is `@rein/define/internal`.
 */
export { type AgentDefinition, type AgentProfile, type CompensationPolicy, defineAgent, type MemoryOptions } from './agent-profile.js';
export { appStateKey } from './app-state-key.js';
export type { ContextPolicy } from './context-policy.js';
export { type App, type AppDefinition, type AppServices, type AppServiceTypes, defineApp } from './define-app.js';
export { ConfigError, ReinError, ToolError, ToolOutcomeUnknownError } from './errors.js';
export { type InputRules, inputRulesSchema, type PiiRules, piiRulesSchema } from './guard-rules.js';
export type { McpServerConfig, McpServers, McpToolOverride } from './mcp-server-config.js';
export type { OutputSpec } from './output-spec.js';
export type { PlanOptions } from './plan-options.js';
export type { RemoteAgentConfig, RemoteAgents } from './remote-agent-config.js';
export {
  type ApprovalRequirement,
  type CompensateWith,
  defineTool,
  type EffectHandle,
  type Tool,
  type ToolContext,
  type ToolDefinition,
  type ToolLogger,
} from './tool.js';
