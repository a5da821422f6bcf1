import type { FastifyInstance } from 'fastify';
import { oidcVerifierFrom } from '../features/identity/company-sign-in.js';
import type { OidcVerifier } from '../features/identity/oidc-verifier.js';
import type { Runtime } from '../process/runtime.js';
import { requireCredentials } from '../shared/config.js';
import { createAuthenticator } from './authenticator.js';
import { createHttpApp, type HttpAppOptions } from './http-app.js';

/**
 * The HTTP shell configured from a service's runtime (keys, company sign-in, metrics,
 * Redis, limits); `routes` registers the service's authenticated `/v1` routes. `oidc`: the
 * process's verifier, when the service uses it for more than bearer tokens (the console's sign-in).
 */
export function createServiceApp(
  rt: Runtime,
  routes: (v1: FastifyInstance) => void | Promise<void>,
  { doors = [], oidc = oidcVerifierFrom(rt.options.oidc) }: { doors?: HttpAppOptions['doors']; oidc?: OidcVerifier | undefined } = {},
): FastifyInstance {
  const { http } = rt.options;
  const apiKeys = requireCredentials(http, rt.options.oidc);
  return createHttpApp({
    logger: rt.logger,
    authenticate: createAuthenticator({ apiKeys, ...(oidc ? { oidc } : {}) }),
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
