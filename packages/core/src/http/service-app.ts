import type { FastifyInstance } from 'fastify';
import { requireApiKeys } from '../config.js';
import type { Runtime } from '../runtime.js';
import { createHttpApp } from './http-app.js';

/**
 * The HTTP shell configured from a service's runtime (keys, metrics, Redis, limits);
 * `routes` registers the service's authenticated `/v1` routes.
 */
export function createServiceApp(rt: Runtime, routes: (v1: FastifyInstance) => void | Promise<void>): FastifyInstance {
  return createHttpApp({
    logger: rt.logger,
    apiKeys: requireApiKeys(rt.config),
    registry: rt.metrics.registry,
    redis: rt.redis,
    bodyLimit: rt.config.REIN_MAX_BODY_BYTES,
    ...(rt.config.REIN_METRICS_TOKEN ? { metricsToken: rt.config.REIN_METRICS_TOKEN } : {}),
    timeouts: {
      requestMs: rt.config.REIN_HTTP_REQUEST_TIMEOUT_MS,
      idleMs: rt.config.REIN_HTTP_IDLE_TIMEOUT_MS,
      keepAliveMs: rt.config.REIN_HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    // The OpenAPI document is named after the service the runtime was created for.
    title: `Rein ${String(rt.logger.bindings().service ?? '')}`.trim(),
    routes,
  });
}
