import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

const ASSETS = {
  'index.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
} as const;

/** `frame-ancestors` (and X-Frame-Options for older browsers): no other page may frame the Approve button. */
const CSP = "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

/** Serves the approver console: three static files, read once, no build step. */
export function mountConsole(app: FastifyInstance): void {
  const files = Object.fromEntries(
    Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(new URL(`./console/${name}`, import.meta.url)) }]),
  );
  const send = (name: keyof typeof ASSETS) => async (_req: unknown, reply: import('fastify').FastifyReply) => {
    const file = files[name];
    return reply
      .header('content-type', file?.type)
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CSP)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .send(file?.body);
  };
  app.get('/', async (_req, reply) => reply.redirect('/console'));
  app.get('/console', send('index.html'));
  app.get('/console/console.js', send('console.js'));
  app.get('/console/console.css', send('console.css'));
}
