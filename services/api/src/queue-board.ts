import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { ApiKey } from '@rein/contract';
import { basicPassword, bearerToken, envelope, findApiKey, isOperator, type Runtime } from '@rein/core/http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const BOARD_PATH = '/admin/queues';

/** The caller's key, as a Bearer token or as the password of HTTP Basic auth (what browsers can send). */
function keyFrom(req: FastifyRequest, keys: ApiKey[]): ApiKey | undefined {
  const header = req.headers.authorization;
  return findApiKey(keys, bearerToken(header) ?? basicPassword(header));
}

const isEnvelope = (payload: unknown) => typeof payload === 'string' && payload.startsWith('{"error":{"code":');

/**
 * Bull Board for operators: read-only (no retry, clean or promote buttons), behind an
 * `operator` key (its queues hold every tenant's jobs: a tenant's admin gets 403), and with job data reduced to ids — run id and step, or whose webhook delivery —
 * so a payload can never put prompts or PII on the screen. Its errors leave in Rein's
 * envelope, without Bull Board's or Redis's messages.
 */
export async function mountQueueBoard(app: FastifyInstance, rt: Runtime): Promise<void> {
  // Static keys only: a browser reaches the board with Basic auth, which carries no provider token.
  const keys = rt.options.http.apiKeys ?? [];
  // One board entry per shard; they share the queue name, so the board tells them apart by prefix.
  const shards = rt.scheduler.queues.length;
  const adapters = rt.scheduler.queues.map((queue, shard) => {
    const adapter = new BullMQAdapter(queue, {
      readOnlyMode: true,
      ...(shards > 1 ? { prefix: `shard-${shard}-`, displayName: `${queue.name} (shard ${shard} of ${shards})` } : {}),
      description: 'one job = one ReAct step',
    });
    adapter.setFormatter('data', (data: { runId?: unknown; step?: unknown; at?: unknown }) => ({
      runId: data.runId,
      step: data.step,
      ...(data.at ? { at: data.at } : {}),
    }));
    adapter.setFormatter('returnValue', (value: unknown) => (typeof value === 'string' ? value : null));
    return adapter;
  });
  // Webhook deliveries carry final answers: the board shows only whose delivery it is.
  const deliveries = new BullMQAdapter(rt.dispatcher.queue, { readOnlyMode: true, description: 'one job = one webhook delivery' });
  deliveries.setFormatter('data', (data: { tenantId?: unknown; webhookId?: unknown; messageId?: unknown; type?: unknown }) => ({
    tenantId: data.tenantId,
    webhookId: data.webhookId,
    messageId: data.messageId,
    type: data.type,
  }));
  deliveries.setFormatter('returnValue', (value: unknown) => (typeof value === 'string' ? value : null));
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({ queues: [...adapters, deliveries], serverAdapter, options: { uiConfig: { boardTitle: 'Rein queue' } } });
  serverAdapter.setErrorHandler((err) => {
    rt.logger.error({ err }, 'queue board failed');
    return { status: 500, body: envelope('queue_board_failed', 'the queue board failed') };
  });
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      const key = keyFrom(req, keys);
      if (!key) {
        return reply
          .status(401)
          .header('www-authenticate', 'Basic realm="rein-admin", charset="UTF-8"')
          .send(envelope('unauthorized', 'an operator API key is required (Basic auth password or Bearer)'));
      }
      if (!isOperator(key.roles))
        return reply.status(403).send(envelope('forbidden', 'the queue board shows every tenant: it needs the operator role'));
    });
    // Bull Board answers misses with its own shapes (`{error: 'Queue not found'}`): put them in the envelope.
    scope.addHook('onSend', async (_req, reply, payload) => {
      if (reply.statusCode < 400 || isEnvelope(payload)) return payload;
      reply.header('content-type', 'application/json; charset=utf-8');
      return JSON.stringify(
        reply.statusCode === 404
          ? envelope('not_found', 'no such queue or job')
          : envelope('queue_board_failed', 'the queue board refused the request'),
      );
    });
    await scope.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
  });
}
