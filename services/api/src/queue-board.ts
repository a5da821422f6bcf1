import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { type ApiKey, findApiKey, type Runtime, requireApiKeys } from '@rein/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const BOARD_PATH = '/admin/queues';

/** An admin key, as a Bearer token or as the password of HTTP Basic auth (what browsers can send). */
function adminFrom(req: FastifyRequest, keys: ApiKey[]): ApiKey | undefined {
  const header = req.headers.authorization ?? '';
  const bearer = /^Bearer (.+)$/.exec(header)?.[1];
  const basic = /^Basic (.+)$/.exec(header)?.[1];
  const token = bearer ?? (basic ? Buffer.from(basic, 'base64').toString().split(':').slice(1).join(':') : undefined);
  const key = findApiKey(keys, token);
  return key?.roles.includes('admin') ? key : undefined;
}

/**
 * Bull Board for operators: read-only (no retry, clean or promote buttons), behind admin
 * auth, and with job data reduced to what Rein's jobs are — run id and step — so a
 * future payload can never put prompts or PII on the screen.
 */
export async function mountQueueBoard(app: FastifyInstance, rt: Runtime): Promise<void> {
  const keys = requireApiKeys(rt.config);
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
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({ queues: adapters, serverAdapter, options: { uiConfig: { boardTitle: 'Rein queue' } } });
  await app.register(async (scope) => {
    scope.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      if (!adminFrom(req, keys)) {
        return reply
          .status(401)
          .header('www-authenticate', 'Basic realm="rein-admin", charset="UTF-8"')
          .send({ error: { code: 'unauthorized', message: 'an admin API key is required (Basic auth password or Bearer)' } });
      }
    });
    await scope.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
  });
}
