/**
 * `@rein/core/http`: the HTTP shell (Fastify apps, routes, event streams, the protocol
 * doors' routes) for the api and approver services. A separate entry so that a process
 * serving no HTTP API (the worker) never loads Fastify. No stability promise; apps use the root.
 */
export { type A2aRoutesDeps, registerA2aCard, registerA2aRoutes } from './http/a2a-routes.js';
export { type Authenticator, createAuthenticator } from './http/authenticator.js';
export { registerDoorRoutes } from './http/door-routes.js';
export { createHttpApp, type HttpAppOptions, type HttpTimeouts, parseInput } from './http/http-app.js';
export { boundJsonDepth, jsonDepthExceeds, MAX_JSON_DEPTH } from './http/json-body.js';
export { type McpRoutesDeps, registerMcpRoutes } from './http/mcp-routes.js';
export { OPENAPI_PATH } from './http/openapi.js';
export { takeOver } from './http/raw-reply.js';
export { receipted, receiptedHeader } from './http/receipt-reply.js';
export { apiRoutes, approverRoutes, idParamsSchema, versionParamsSchema } from './http/route-schemas.js';
export { runHttpService } from './http/run-http-service.js';
export { type RunRoutesDeps, registerRunRoutes } from './http/run-routes.js';
export { registerScheduleRoutes } from './http/schedule-routes.js';
export { createServiceApp } from './http/service-app.js';
export { EventStreams, lastEventId, type SseEntry, type SseFrames, type SseSource, type StreamCaps, streamCaps } from './http/sse.js';
