import type { FastifyReply } from 'fastify';

/**
 * Takes the reply over for raw writes (event streams, the MCP transport), keeping the
 * headers hooks already set on it — CORS's among them: Fastify writes those only when it
 * sends a reply itself, and a browser drops a cross-origin stream without them.
 */
export function takeOver(reply: FastifyReply): FastifyReply['raw'] {
  reply.hijack();
  const res = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
  return res;
}
