import type { ApprovalLinks, LinkPreview } from '@rein/core/http';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** No script, no frames, forms back to us only, and the token (in the URL) never leaves in a Referer. */
const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
} as const;

/** Everything shown is escaped: summaries and arguments are written by a model and an app. */
export const escapeHtml = (s: string) =>
  s.replace(/[&<>"'`]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' })[c] ?? c);

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>` +
  `<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:1rem;overflow:auto}</style>` +
  `</head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;

function confirmation(p: LinkPreview): string {
  const a = p.approval;
  const args = JSON.stringify(a.approvedArguments ?? a.arguments, null, 2);
  const act = p.verdict === 'approve' ? 'Approve' : 'Reject';
  return page(
    `${act} ${a.toolName}?`,
    `<p>${escapeHtml(a.summary)}</p><p>Risk: ${escapeHtml(a.risk)} · requested by ${escapeHtml(a.requestedBy)} · you decide as ${escapeHtml(p.userId)}</p>` +
      `<pre>${escapeHtml(args)}</pre><p>Nothing has been decided yet. This link works once.</p>` +
      `<form method="post" action=""><button type="submit">${act}</button></form>`,
  );
}

/** The answer of a refused or failed link: a page saying why, with the error's status (403, 409, 410). */
function refusal(reply: FastifyReply, err: unknown) {
  const e = err as { status?: number; message?: string };
  if (typeof e.status !== 'number' || e.status >= 500) throw err;
  return reply
    .code(e.status)
    .headers(HEADERS)
    .send(page('This link cannot be used', `<p>${escapeHtml(e.message ?? 'refused')}</p>`));
}

/**
 * `GET /links?token=` shows what the link would do and decides nothing (mail and chat
 * scanners fetch links); `POST` decides. Outside `/v1`: the link is its own credential.
 */
export function mountLinkPages(app: FastifyInstance, links: ApprovalLinks): void {
  app.register(async (scope) => {
    // A browser's form post: its (empty) body is read and ignored, never parsed.
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, (_req, _body, done) =>
      done(null, undefined),
    );
    const token = (query: unknown) => {
      const t = (query as { token?: unknown }).token;
      return typeof t === 'string' ? t : '';
    };
    scope.get('/links', async (req, reply) => {
      try {
        return reply.headers(HEADERS).send(confirmation(await links.preview(token(req.query))));
      } catch (err) {
        return refusal(reply, err);
      }
    });
    scope.post('/links', async (req, reply) => {
      try {
        const decided = await links.use(token(req.query));
        const note = decided.status === 'pending' ? ` It needs ${decided.approvalsNeeded ?? 0} more approval(s).` : '';
        return reply
          .headers(HEADERS)
          .send(page(`Done: ${decided.status}`, `<p>${escapeHtml(`${decided.toolName}: ${decided.summary}.${note}`)}</p>`));
      } catch (err) {
        return refusal(reply, err);
      }
    });
  });
}
