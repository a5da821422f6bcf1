import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../process/runtime.js';
import { requireApiKeys } from '../shared/config.js';
import { createHttpApp, type HttpAppOptions } from './http-app.js';

/**
 * The HTTP shell configured from a service's runtime (keys, metrics, Redis, limits);
 * `routes` registers the service's authenticated `/v1` routes.
 */
export function createServiceApp(
  rt: Runtime,
  routes: (v1: FastifyInstance) => void | Promise<void>,
  doors: HttpAppOptions['doors'] = [],
): FastifyInstance {
  const { http } = rt.options;
  return createHttpApp({
    logger: rt.logger,
    apiKeys: requireApiKeys(http),
    registry: rt.metrics.registry,
    redis: rt.redis,
    bodyLimit: http.maxBodyBytes,
    ...(http.metricsToken ? { metricsToken: http.metricsToken } : {}),
    timeouts: {
      requestMs: http.requestTimeoutMs,
      idleMs: http.idleTimeoutMs,
      keepAliveMs: http.keepAliveTimeoutMs,
    },
    // The OpenAPI document is named after the service the runtime was created for.
    title: `Rein ${String(rt.logger.bindings().service ?? '')}`.trim(),
    routes,
    doors,
  });
}
