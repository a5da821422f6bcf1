import swagger from '@fastify/swagger';
import { errorEnvelopeSchema } from '@rein/contract';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

/** The routes that act for a caller; only they are in the document, each with its bearer requirement. */
export const VERSIONED = /^\/v1(\/|$)/i;

export const OPENAPI_PATH = '/openapi.json';

/**
 * Serves `GET /openapi.json` (no auth): an OpenAPI 3.1 document generated at startup
 * from the zod schemas attached to the `/v1` routes — the ones their handlers validate
 * with — so the document cannot drift from what the service does. Call before the
 * routes are registered: the generator collects them as they are added.
 */
export function registerOpenApi(app: FastifyInstance, title: string, version: string): void {
  app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title,
        version,
        description: 'Errors are `{"error":{"code","message"}}`; match on `code`.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // Relative: the routes are on the service that serves this document, wherever it is deployed.
      servers: [{ url: '/', description: 'the service serving this document' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API key from REIN_API_KEYS' } } },
    },
    transform: (doc) => {
      if (!VERSIONED.test(doc.url)) return { schema: { hide: true }, url: doc.url };
      const { schema, url } = jsonSchemaTransform(
        [doc.route.method].flat().includes('POST') ? { ...doc, schema: withBodyErrors(doc.schema) } : doc,
      );
      return { schema: { ...schema, security: [{ bearer: [] }] }, url };
    },
  });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}

/** Every POST reads a body, so any of them can answer 413 (too large) and 415 (not JSON). */
const BODY_ERRORS = {
  413: errorEnvelopeSchema.describe('payload_too_large'),
  415: errorEnvelopeSchema.describe('unsupported_media_type: bodies are application/json'),
};
const withBodyErrors = <S extends { response?: unknown }>(schema: S): S => ({
  ...schema,
  response: { ...BODY_ERRORS, ...(schema.response as object | undefined) },
});

/**
 * In the `/v1` scope the schemas document the routes; the handlers validate (so every
 * 400 keeps Rein's envelope and names the fields) and answers are plain JSON.
 */
export function documentOnly(v1: FastifyInstance): void {
  v1.setValidatorCompiler(() => (value) => ({ value }));
  v1.setSerializerCompiler(() => (data) => JSON.stringify(data));
}
