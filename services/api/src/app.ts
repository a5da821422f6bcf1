import {
  createServiceApp,
  EventStreams,
  InvalidRequestError,
  idParamsSchema,
  lastEventId,
  listRunsQuerySchema,
  parseInput,
  type Runtime,
  registerQueueDepth,
  runKeys,
  submitRunBodySchema,
} from '@rein/core';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { mountQueueBoard } from './queue-board.js';

const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

/** The runs API: submit, read, trace, stream, list, cancel. Logic lives in @rein/core. */
export function createApiApp(rt: Runtime): FastifyInstance {
  const app = createServiceApp(rt);
  const runs = rt.runs;
  const streams = new EventStreams(rt.redis, rt.logger, rt.config.REIN_MAX_STREAMS_PER_TENANT);
  app.addHook('preClose', async () => streams.close());
  registerQueueDepth(
    rt.metrics,
    rt.scheduler.queues.map((queue) => () => queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'failed')),
  );

  app.post('/v1/runs', async (req, reply) => {
    const body = parseInput(submitRunBodySchema, req.body, 'body');
    const header = req.headers['idempotency-key'];
    if (Array.isArray(header)) throw new InvalidRequestError('send one Idempotency-Key header');
    const key = header === undefined ? undefined : parseInput(idempotencyKeySchema, header, 'Idempotency-Key');
    const { run, created } = await runs.submit(req.principal, body, key);
    reply.header('location', `/v1/runs/${run.id}`);
    if (!created) reply.header('idempotent-replayed', 'true');
    return reply.status(created ? 202 : 200).send(run);
  });

  app.get('/v1/runs', async (req) => {
    const q = parseInput(listRunsQuerySchema, req.query, 'query');
    return { runs: await runs.list(req.principal, q.status, q.limit) };
  });

  app.get('/v1/runs/:id', async (req) => runs.get(req.principal, parseInput(idParamsSchema, req.params, 'path').id));

  app.get('/v1/runs/:id/trace', async (req) => runs.trace(req.principal, parseInput(idParamsSchema, req.params, 'path').id));

  app.get('/v1/runs/:id/snapshots', async (req) => runs.snapshots(req.principal, parseInput(idParamsSchema, req.params, 'path').id));

  app.post('/v1/runs/:id/cancel', async (req) => runs.cancel(req.principal, parseInput(idParamsSchema, req.params, 'path').id));

  app.get('/v1/runs/:id/events', async (req, reply) => {
    const { id } = parseInput(idParamsSchema, req.params, 'path');
    await runs.get(req.principal, id); // 404 before the stream opens
    await streams.serve(
      reply,
      req.principal.tenantId,
      {
        key: runKeys(id).events,
        read: (cursor) => rt.store.readEvents(id, cursor),
        isLast: (entry) => entry.event.type === 'run.finished',
      },
      lastEventId(req.headers, req.query),
    );
  });

  app.register((scope) => mountQueueBoard(scope, rt));
  return app;
}
