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
 * `cors`: answer CORS for the configured origins (the API, which browser chat pages call).
 */
export function createServiceApp(
  rt: Runtime,
  routes: (v1: FastifyInstance) => void | Promise<void>,
  {
    doors = [],
    oidc = oidcVerifierFrom(rt.options.oidc),
    cors = false,
  }: { doors?: HttpAppOptions['doors']; oidc?: OidcVerifier | undefined; cors?: boolean } = {},
): FastifyInstance {
  const { http } = rt.options;
  const apiKeys = requireCredentials(http, rt.options.oidc);
  return createHttpApp({
    logger: rt.logger,
    authenticate: createAuthenticator({
      apiKeys,
      ...(oidc ? { oidc } : {}),
      ...(rt.signIns ? { onSignedIn: rt.signIns.seen } : {}),
    }),
    registry: rt.metrics.registry,
    redis: rt.redis,
    bodyLimit: http.maxBodyBytes,
    ...(cors ? { corsOrigins: http.corsOrigins } : {}),
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
