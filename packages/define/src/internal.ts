/**
 * `@rein/define/internal`: every module of the package, for `@rein/core` (which re-exports
 * them at their old paths). No stability promise; apps use the root.
 */
export * from './agent-profile.js';
export * from './app-state-key.js';
export * from './context-policy.js';
export * from './define-app.js';
export * from './delegation.js';
export * from './errors.js';
export * from './guard-rules.js';
export * from './mcp-server-config.js';
export * from './output-spec.js';
export * from './plan-options.js';
export * from './remote-agent-config.js';
export * from './tool.js';
export * from './zod-schema.js';
