import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import type { McpDoor } from '../features/mcp-door/mcp-door.js';
import type { RunService } from '../features/runs/run-service.js';
import type { Logger } from '../shared/logger.js';
import { watchRuns } from './a2a-routes.js';
import { takeOver } from './raw-reply.js';
import type { EventStreams } from './sse.js';

export interface McpRoutesDeps {
  door: McpDoor;
  runs: Pick<RunService, 'events'>;
  streams: EventStreams;
  /** The browser origins a call may come from (REIN_CORS_ORIGINS); a call from any other is refused. */
  origins: readonly string[];
  logger: Logger;
}

/**
 * `POST /mcp`: MCP's Streamable HTTP, stateless (a server and transport per request), in
 * the authenticated scope — the same bearer keys as the API. A tool call holds one of the
 * caller's stream slots while its run goes on (a JSON-RPC batch, which would hold many on
 * one, is refused); GET and DELETE answer 405, as a stateless server does. MCP's
 * transport asks a server to check `Origin` against DNS rebinding: a call a browser sends
 * from an origin not listed is refused with 403.
 */
export function registerMcpRoutes(scope: FastifyInstance, deps: McpRoutesDeps): void {
  const watch = watchRuns(deps.runs, deps.streams);
  const origins = new Set(deps.origins);
  scope.post('/mcp', { schema: { hide: true } }, async (req, reply) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin))
      return reply
        .status(403)
        .send({ jsonrpc: '2.0', id: null, error: { code: -32000, message: `origin ${origin} is not one this server answers` } });
    // One request, one call: a batch's calls would all be held on the one stream slot it takes.
    if (Array.isArray(req.body))
      return reply.status(400).send({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: 'JSON-RPC batches are not served (MCP has none since 2025-06-18)' },
      });
    const release = deps.streams.hold(req.principal);
    const gone = new AbortController();
    const server = deps.door.server(req.principal, watch, gone.signal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    takeOver(reply).on('close', () => {
      gone.abort();
      release();
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (err) {
      deps.logger.error({ err }, 'mcp request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'internal error' } }));
    }
  });
  for (const method of ['GET', 'DELETE'] as const) {
    scope.route({
      method,
      url: '/mcp',
      schema: { hide: true },
      handler: async (_req, reply) =>
        reply
          .status(405)
          .header('allow', 'POST')
          .send({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'this MCP server is stateless: POST only' } }),
    });
  }
}
