/**
 * The HTTP contract as zod schemas — requests, answers, events — with the stable error
 * codes and webhook verification, and no server code behind them: what `@rein/client`
 * is typed by and the services validate with (`@rein/core/schemas` re-exports it).
 */
export * from './api.js';
export * from './app-version.js';
export * from './approval.js';
export * from './audit.js';
export * from './compensation.js';
export * from './error-codes.js';
export * from './event.js';
export * from './identity.js';
export * from './message.js';
export * from './replay.js';
export * from './run.js';
export * from './schedule.js';
export * from './verify-webhook.js';
export * from './version.js';
export * from './views.js';
export * from './webhook.js';
