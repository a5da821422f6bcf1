import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
const CSP =
  "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

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
export function mountConsole(app: FastifyInstance): void {
  if (!existsSync(join(BUILT, 'index.html'))) throw new Error(`the console is not built (${BUILT}): run npm run build`);
  const files = readBuilt(BUILT);
  const send = (reply: FastifyReply, name: string) => {
    const file = files.get(name);
    if (!file) return reply.code(404).header('content-type', 'text/plain; charset=utf-8').send('not found');
    return reply
      .header('content-type', file.type)
      .header('cache-control', name === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable')
      .header('content-security-policy', CSP)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(file.body);
  };
  app.get('/', async (_req, reply) => reply.redirect('/console'));
  app.get('/console', async (_req, reply) => send(reply, 'index.html'));
  app.get('/console/', async (_req, reply) => send(reply, 'index.html'));
  app.get<{ Params: { file: string } }>('/console/assets/:file', async (req, reply) => send(reply, `assets/${req.params.file}`));
}
