import type { FastifyInstance } from 'fastify';
import { requireApiKeys } from '../config.js';
import type { Runtime } from '../runtime.js';
import { createHttpApp } from './http-app.js';

/** The HTTP shell configured from a service's runtime (keys, metrics, Redis, limits). */
export function createServiceApp(rt: Runtime): FastifyInstance {
  return createHttpApp({
    logger: rt.logger,
    apiKeys: requireApiKeys(rt.config),
    registry: rt.metrics.registry,
    redis: rt.redis,
    bodyLimit: rt.config.REIN_MAX_BODY_BYTES,
  });
}
