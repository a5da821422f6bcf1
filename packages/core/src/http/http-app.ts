import cors from '@fastify/cors';
import type { Principal } from '@rein/contract';
import { MAX_ID_LENGTH } from '@rein/contract';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Registry } from 'prom-client';
import type { ZodType } from 'zod';
import type { RedisClient } from '../adapters/redis/redis.js';
import { bearerToken, metricsAuthorized } from '../policy/identity/credentials.js';
import { ConfigError, envelope, InvalidRequestError, UnauthorizedError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { Authenticator } from './authenticator.js';
import { clientErrorHandler, publicError } from './error-envelope.js';
import { boundJsonDepth } from './json-body.js';
import { documentOnly, registerOpenApi, VERSIONED } from './openapi.js';
import { apiRoutes } from './route-schemas.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; only routes in the authenticated scope can read it. */
    readonly principal: Principal;
  }
}

/** How long a client may take: to send a whole request, between bytes, and idle between requests. */
export interface HttpTimeouts {
  requestMs: number;
  idleMs: number;
  keepAliveMs: number;
}

export interface HttpAppOptions {
  logger: Logger;
  /** Who a bearer token is (keys, and provider-signed JWTs when company sign-in is on). */
  authenticate: Authenticator;
  registry: Registry;
  redis: RedisClient;
  bodyLimit: number;
  timeouts: HttpTimeouts;
  /** Set: `/metrics` answers only `Authorization: Bearer <metricsToken>`. */
  metricsToken?: string;
  /**
   * Browser origins answered with CORS headers (preflights included, before authentication,
   * since a browser sends no credentials with one). Empty or unset: no CORS at all.
   */
  corsOrigins?: readonly string[];
  /** Names the OpenAPI document at `/openapi.json`. */
  title: string;
  /**
   * The routes that act for a caller, all under `/v1`. They are registered in a scope
   * whose onRequest hook authenticates — before the body is read — so a handler there
   * never runs without a principal, however the path is encoded.
   */
  routes: (v1: FastifyInstance) => void | Promise<void>;
  /**
   * Protocol doors mounted under their own prefix (`/lg`), authenticated like `/v1` with
   * the same keys, also read from `x-api-key` (the header their clients send).
   */
  doors?: Array<{ prefix: string; routes: (scope: FastifyInstance) => void | Promise<void> }>;
}

/** Response headers a browser page may read: where a created run is, a replayed request, the chat stream's version. */
const EXPOSED_HEADERS = ['location', 'content-location', 'idempotent-replayed', 'x-vercel-ai-ui-message-stream'];

/**
 * CORS for the listed origins. Registered before the routes so its hook covers every
 * scope; an origin not listed gets what it gets with CORS off (no headers, a 404 preflight).
 * No credentials mode: a key or token travels in `Authorization`, never in a cookie.
 */
function allowOrigins(app: FastifyInstance, origins: readonly string[]): void {
  const allowed = new Set(origins);
  app.register(cors, {
    origin: (origin, done) => done(null, origin !== undefined && allowed.has(origin)),
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
  });
}

/** Validates a body, query or params object; a mismatch is a 400 naming the fields. */
export function parseInput<T>(schema: ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || what}: ${i.message}`).join('; ');
  throw new InvalidRequestError(`invalid ${what}: ${issues}`);
}

const AUTHENTICATED = Symbol('rein.authenticated');
/** The version of the `/v1` contract the OpenAPI document describes. */
const API_VERSION = '1.0.0';
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The HTTP shell shared by the API and the approver: bearer auth (keys or JWTs) on every `/v1`
 * route, the error envelope `{"error":{"code","message"}}` for every error (Fastify's
 * own included), JSON bodies bounded in size and depth, timeouts for slow clients, one
 * access-log line per request, health, readiness and metrics.
 */
export function createHttpApp(opts: HttpAppOptions): FastifyInstance {
  const principals = new WeakMap<FastifyRequest, Principal>();

  /**
   * One line per request: what was asked and how it ended — never keys, bodies or the
   * raw URL. Plain fields, not Fastify's request and reply objects (the PII masking hook
   * would flatten those to `{}` before any serializer ran).
   */
  class AccessLog extends LogController {
    override incomingRequest() {}
    override requestCompleted(_err: unknown, req: FastifyRequest, reply: FastifyReply) {
      const route = req.routeOptions.url;
      const tenantId = principals.get(req)?.tenantId;
      const line = {
        method: req.method,
        ...(route ? { route } : {}),
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        ...(tenantId ? { tenantId } : {}),
      };
      if (route && PROBES.has(route)) req.log.debug(line, 'request');
      else req.log.info(line, 'request');
    }
  }

  const sendError = (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const { status, body, internal } = publicError(err);
    if (internal) req.log.error({ err }, 'request failed');
    return reply.status(status).send(body);
  };

  const { requestMs, idleMs, keepAliveMs } = opts.timeouts;
  const app: FastifyInstance = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    logController: new AccessLog(),
    bodyLimit: opts.bodyLimit,
    // The router refuses (414) exactly the ids the schema refuses for length: one bound.
    routerOptions: { maxParamLength: MAX_ID_LENGTH },
    requestTimeout: requestMs,
    connectionTimeout: idleMs,
    keepAliveTimeout: keepAliveMs,
    // Node checks request timeouts on an interval (30 s by default): check often enough that the bound holds.
    http: { headersTimeout: requestMs, connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(requestMs / 4))) },
    clientErrorHandler,
    frameworkErrors: (err, req, reply) => sendError(err, req, reply),
  });
  boundJsonDepth(app);
  registerOpenApi(app, opts.title, API_VERSION);
  if (opts.corsOrigins?.length) allowOrigins(app, opts.corsOrigins);

  app.decorateRequest('principal', {
    getter(this: FastifyRequest) {
      const principal = principals.get(this);
      if (!principal) throw new UnauthorizedError();
      return principal;
    },
  });
  // A /v1 route outside the authenticated scope is a programming error: refuse it at startup.
  app.addHook('onRoute', function (this: FastifyInstance & { [AUTHENTICATED]?: boolean }, route) {
    if (VERSIONED.test(route.url) && !this[AUTHENTICATED]) {
      throw new ConfigError(`route ${route.method} ${route.url} must be registered in the authenticated scope`);
    }
  });

  app.setErrorHandler(sendError);
  app.setNotFoundHandler((_req, reply) => reply.status(404).send(envelope('not_found', 'no such route')));

  app.register(async (v1) => {
    v1.decorate(AUTHENTICATED, true);
    documentOnly(v1);
    // onRequest runs before the body is read: an unauthenticated caller cannot make us wait for one.
    v1.addHook('onRequest', async (req) => {
      principals.set(req, await opts.authenticate(bearerToken(req.headers.authorization)));
    });
    v1.get('/v1/me', { schema: apiRoutes.me }, async (req) => req.principal);
    await opts.routes(v1);
  });
  for (const door of opts.doors ?? []) {
    app.register(
      async (scope) => {
        scope.addHook('onRequest', async (req) => {
          const header = req.headers['x-api-key'];
          const token = typeof header === 'string' ? header : bearerToken(req.headers.authorization);
          principals.set(req, await opts.authenticate(token));
        });
        await door.routes(scope);
      },
      { prefix: door.prefix },
    );
  }

  // The pid lets a launcher (`rein dev`) tell its own child from whatever else holds the port.
  app.get('/healthz', async () => ({ ok: true, pid: process.pid }));
  app.get('/readyz', async (req, reply) => {
    try {
      await opts.redis.ping();
      return { ok: true, redis: 'ok' };
    } catch (err) {
      req.log.warn({ err: (err as Error).message }, 'not ready: redis');
      return reply.status(503).send(envelope('redis_unavailable', 'Redis is not reachable'));
    }
  });
  // Always answers: collectors that need Redis leave their series out while it is away.
  app.get('/metrics', async (req, reply) => {
    if (!metricsAuthorized(opts.metricsToken, req.headers.authorization)) throw new UnauthorizedError('a metrics token is required');
    reply.header('content-type', opts.registry.contentType);
    return opts.registry.metrics();
  });
  return app;
}
