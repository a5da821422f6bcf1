import { timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { type ZodType, z } from 'zod';
import { InvalidRequestError, ReinError, UnauthorizedError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis.js';
import type { ApiKey, Principal } from '../schemas/identity.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

export interface HttpAppOptions {
  logger: Logger;
  apiKeys: ApiKey[];
  registry: Registry;
  redis: RedisClient;
  bodyLimit: number;
}

const sameKey = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The API key a presented token belongs to (compared in constant time), if any. */
export const findApiKey = (keys: ApiKey[], token: string | undefined): ApiKey | undefined =>
  token ? keys.find((k) => sameKey(k.key, token)) : undefined;

/** Validates a body, query or params object; a mismatch is a 400 naming the fields. */
export function parseInput<T>(schema: ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || what}: ${i.message}`).join('; ');
  throw new InvalidRequestError(`invalid ${what}: ${issues}`);
}

export const idParamsSchema = z.object({ id: z.string().min(1).max(200) });

/**
 * The HTTP shell shared by the API and the approver: bearer-key auth, the error
 * envelope `{"error":{"code","message"}}`, body limits, health, readiness and metrics.
 */
export function createHttpApp(opts: HttpAppOptions): FastifyInstance {
  const app: FastifyInstance = Fastify({ loggerInstance: opts.logger as FastifyBaseLogger, bodyLimit: opts.bodyLimit });
  const publicPaths = new Set(['/healthz', '/readyz', '/metrics']);

  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (req: FastifyRequest) => {
    const path = req.url.split('?')[0] ?? '';
    if (publicPaths.has(path) || !path.startsWith('/v1/')) return;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const key = findApiKey(opts.apiKeys, token);
    if (!key) throw new UnauthorizedError();
    req.principal = { tenantId: key.tenantId, userId: key.userId, roles: key.roles };
  });

  app.setErrorHandler((err: Error, req, reply) => {
    if (err instanceof ReinError) {
      if (err.status >= 500) req.log.error({ err }, 'request failed');
      return reply.status(err.status).send({ error: { code: err.code, message: err.message } });
    }
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) {
      req.log.error({ err }, 'request failed');
      // Redis away (producers fail fast): tell the caller to come back, do not hang.
      return reply.status(503).send({ error: { code: 'unavailable', message: 'service temporarily unavailable' } });
    }
    const code = status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : 'invalid_request';
    return reply.status(status).send({ error: { code, message: err.message } });
  });
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({ error: { code: 'not_found', message: `no route ${req.method} ${req.url.split('?')[0]}` } }),
  );

  app.get('/v1/me', async (req) => req.principal);
  app.get('/healthz', async () => ({ ok: true }));
  app.get('/readyz', async (_req, reply) => {
    try {
      await opts.redis.ping();
      return { ok: true, redis: 'ok' };
    } catch (err) {
      return reply.status(503).send({ ok: false, redis: (err as Error).message });
    }
  });
  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', opts.registry.contentType);
    return opts.registry.metrics();
  });
  return app;
}
