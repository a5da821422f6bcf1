import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OidcVerifier } from '@rein/core/http';
import type { FastifyInstance, FastifyReply } from 'fastify';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
};

/**
 * No inline script or style, nothing from another origin, and (`frame-ancestors`, with
 * X-Frame-Options for older browsers) no other page may frame the Approve button.
 */
const csp = (connect: readonly string[] = []) =>
  `default-src 'self'; style-src 'self'; script-src 'self'; connect-src ${["'self'", ...connect].join(' ')}; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`;

/** Company sign-in for the console: the provider (through the process's verifier) and the console's public client. */
export interface ConsoleSignIn {
  verifier: Pick<OidcVerifier, 'discovery'>;
  clientId: string;
  scopes: string;
  token: 'access' | 'id';
}

/** The console as Vite built it (`npm run build`): the package's dist/console, from src/ (tests) or dist/ alike. */
const BUILT = fileURLToPath(new URL('../dist/console/', import.meta.url));

function readBuilt(dir: string, prefix = ''): Map<string, { type: string; body: Buffer }> {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory()) for (const [k, v] of readBuilt(join(dir, entry.name), `${path}/`)) files.set(k, v);
    else files.set(path, { type: TYPES[extname(entry.name)] ?? 'application/octet-stream', body: readFileSync(join(dir, entry.name)) });
  }
  return files;
}

/**
 * Serves the console: the built files, read once. The page is one document (`/console`)
 * whose routes are in the hash; its assets have content-hashed names, so they may be cached.
 */
export function mountConsole(app: FastifyInstance, signIn?: ConsoleSignIn): void {
  if (!existsSync(join(BUILT, 'index.html'))) throw new Error(`the console is not built (${BUILT}): run npm run build`);
  const files = readBuilt(BUILT);
  /**
   * What the page may fetch: its own origin, and with company sign-in the provider's token
   * endpoint (the code is redeemed from the page, a public client with PKCE). Nothing else.
   */
  const connectTo = async (): Promise<string[]> => {
    const endpoint = signIn
      ? await signIn.verifier.discovery().then(
          (d) => d.token_endpoint,
          () => undefined,
        )
      : undefined;
    return endpoint ? [new URL(endpoint).origin] : [];
  };
  const send = async (reply: FastifyReply, name: string) => {
    const file = files.get(name);
    if (!file) return reply.code(404).header('content-type', 'text/plain; charset=utf-8').send('not found');
    return reply
      .header('content-type', file.type)
      .header('cache-control', name === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable')
      .header('content-security-policy', csp(name === 'index.html' ? await connectTo() : []))
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(file.body);
  };
  app.get('/', async (_req, reply) => reply.redirect('/console'));
  // Unauthenticated by nature: what the sign-in page needs before anyone is signed in (no secret in it).
  app.get('/console/sign-in', async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    if (!signIn) return { methods: ['key'] };
    const d = await signIn.verifier.discovery();
    if (!d.authorization_endpoint || !d.token_endpoint) return { methods: ['key'] };
    return {
      methods: ['key', 'oidc'],
      oidc: {
        issuer: d.issuer,
        clientId: signIn.clientId,
        scopes: signIn.scopes,
        token: signIn.token,
        authorizationEndpoint: d.authorization_endpoint,
        tokenEndpoint: d.token_endpoint,
        ...(d.end_session_endpoint ? { endSessionEndpoint: d.end_session_endpoint } : {}),
      },
    };
  });
  app.get('/console', async (_req, reply) => send(reply, 'index.html'));
  app.get('/console/', async (_req, reply) => send(reply, 'index.html'));
  app.get<{ Params: { file: string } }>('/console/assets/:file', async (req, reply) => send(reply, `assets/${req.params.file}`));
}
