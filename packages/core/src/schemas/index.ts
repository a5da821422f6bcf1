/**
 * The HTTP contract as zod schemas — requests, answers, events — with no server code
 * behind them: `@rein/core/schemas`, what `@rein/client` takes its types from.
 */
export * from './api.js';
export * from './approval.js';
export * from './event.js';
export * from './identity.js';
export * from './run.js';
export * from './views.js';
export * from './webhook.js';
