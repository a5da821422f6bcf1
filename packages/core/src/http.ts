/**
 * `@rein/core/http`: what the HTTP services (`@rein/api`, `@rein/approver`) need beyond
 * the public index — the HTTP shell (Fastify apps, routes, event streams, the protocol
 * doors' routes) and the features, stores and checks they wire into it. A separate entry
 * so that a process serving no HTTP API (the worker) never loads Fastify.
 * INTERNAL: no stability promise; any name may change or go in any release. Each name is
 * one the api or the approver imports (`test/infra/core-entries.test.ts`).
 */

export { LinkUses } from './adapters/redis/link-uses.js';
export { ScheduleStore } from './adapters/redis/schedule-store.js';
export { createA2aService } from './features/a2a/a2a-service.js';
export { type ApprovalLinks, createApprovalLinks, type LinkPreview } from './features/approvals/approval-links.js';
export { createDecisionLog } from './features/approvals/decision-log.js';
export { feedVisibleTo } from './features/approvals/feed-visibility.js';
export { oidcVerifierFrom } from './features/identity/company-sign-in.js';
export type { OidcVerifier } from './features/identity/oidc-verifier.js';
export { createLangGraphService, type LangGraphService, NotServedError } from './features/langgraph/langgraph-service.js';
export * as lgSchemas from './features/langgraph/lg-schemas.js';
export { ThreadStore } from './features/langgraph/thread-store.js';
export { createMcpDoor } from './features/mcp-door/mcp-door.js';
export type { StoreService } from './features/store/store-service.js';
export { createVersionImpact } from './features/versions/version-impact.js';
export { createVersionService } from './features/versions/version-service.js';
export { createWebhookService } from './features/webhooks/webhook-service.js';
export { registerA2aCard, registerA2aRoutes } from './http/a2a-routes.js';
export { registerDoorRoutes } from './http/door-routes.js';
export { parseInput } from './http/http-app.js';
export { registerMcpRoutes } from './http/mcp-routes.js';
export { takeOver } from './http/raw-reply.js';
export { receipted, receiptedHeader } from './http/receipt-reply.js';
export { apiRoutes, approverRoutes, idParamsSchema, versionParamsSchema } from './http/route-schemas.js';
export { runHttpService } from './http/run-http-service.js';
export { registerApiRunRoutes, registerRunRoutes } from './http/run-routes.js';
export { registerScheduleRoutes } from './http/schedule-routes.js';
export { createServiceApp } from './http/service-app.js';
export { EventStreams, lastEventId, streamCaps } from './http/sse.js';
export { approvalContext } from './policy/approvals/approval-context.js';
export { isOperator } from './policy/approvals/decision-rights.js';
export { linkSecret } from './policy/approvals/link-token.js';
export { basicPassword, bearerToken, findApiKey } from './policy/identity/credentials.js';
export type { StreamMode as LgStreamMode } from './policy/langgraph/lg-stream.js';
export { loadAppOrExit } from './process/load-app.js';
export type { Runtime } from './process/runtime.js';
export { requireCredentials } from './shared/config.js';
export { envelope, InvalidRequestError } from './shared/errors.js';
export { tenantKeys } from './shared/keys.js';
export { registerQueueDepth, registerVersionGauges } from './shared/metrics.js';
export { loadOptionsOrExit } from './shared/options.js';
