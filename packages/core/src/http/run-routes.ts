import {
  forkRunBodySchema,
  idempotencyKeySchema,
  listRunsQuerySchema,
  replayRunBodySchema,
  submitRunBodySchema,
  usageQuerySchema,
} from '@rein/contract';
import type { FastifyInstance } from 'fastify';
import { REIN_ATTR, submitSpan } from '../adapters/tracing/rein-spans.js';
import type { VersionService } from '../features/versions/version-service.js';
import type { Runtime } from '../process/runtime.js';
import { InvalidRequestError } from '../shared/errors.js';
import { parseInput } from './http-app.js';
import { receipted } from './receipt-reply.js';
import { idParamsSchema, apiRoutes as schemas } from './route-schemas.js';
import { type EventStreams, lastEventId } from './sse.js';

export interface RunRoutesDeps {
  streams: EventStreams;
  versions: Pick<VersionService, 'list'>;
}

/**
 * Every run route is registered here (a new one too): these, which both the API and the
 * approver serve, and `registerApiRunRoutes` below, the API's own.
 * The run routes a person looking at runs needs: list and search, read, trace, follow,
 * cancel, compensate, replay and its diff, fork, usage and the version list. The API serves them, and so does the
 * approver, whose console reads runs from its own origin; one registration for both.
 */
export function registerRunRoutes(v1: FastifyInstance, rt: Runtime, deps: RunRoutesDeps): void {
  const { runs } = rt;
  const id = (params: unknown) => parseInput(idParamsSchema, params, 'path').id;

  v1.get('/v1/runs', { schema: schemas.listRuns }, async (req) =>
    runs.list(req.principal, parseInput(listRunsQuerySchema, req.query, 'query')),
  );
  v1.get('/v1/usage', { schema: schemas.getUsage }, async (req) =>
    runs.usage(req.principal, parseInput(usageQuerySchema, req.query, 'query')),
  );
  v1.get('/v1/versions', { schema: schemas.listVersions }, async (req) => deps.versions.list(req.principal));
  v1.get('/v1/runs/:id', { schema: schemas.getRun }, async (req) => runs.get(req.principal, id(req.params)));
  v1.get('/v1/runs/:id/trace', { schema: schemas.getTrace }, async (req) => runs.trace(req.principal, id(req.params)));
  v1.post('/v1/runs/:id/cancel', { schema: schemas.cancelRun }, async (req) =>
    receipted(rt.receipts, req.principal, () => runs.cancel(req.principal, id(req.params))),
  );
  // Undo a finished run's completed writes (approver and up).
  v1.post('/v1/runs/:id/compensate', { schema: schemas.compensateRun }, async (req, reply) =>
    reply.code(202).send(await receipted(rt.receipts, req.principal, () => runs.compensate(req.principal, id(req.params)))),
  );
  // Replay and fork (docs/replay.md): new runs of a finished one the caller may read.
  v1.post('/v1/runs/:id/replay', { schema: schemas.replayRun }, async (req, reply) =>
    reply.code(202).send(await rt.replays.replay(req.principal, id(req.params), parseInput(replayRunBodySchema, req.body ?? {}, 'body'))),
  );
  v1.get('/v1/runs/:id/diff', { schema: schemas.diffRun }, async (req) => rt.replays.diff(req.principal, id(req.params)));
  v1.post('/v1/runs/:id/fork', { schema: schemas.forkRun }, async (req, reply) =>
    reply.code(202).send(await rt.replays.fork(req.principal, id(req.params), parseInput(forkRunBodySchema, req.body, 'body'))),
  );
  v1.get('/v1/runs/:id/events', { schema: schemas.runEvents }, async (req, reply) => {
    const source = await runs.events(req.principal, id(req.params)); // 404 before the stream opens
    await deps.streams.serve(reply, req.principal, source, lastEventId(req.headers, req.query));
  });
}

/**
 * The run routes only the API serves: submit (the approver starts no runs) and a run's
 * model snapshots (admins).
 */
export function registerApiRunRoutes(v1: FastifyInstance, rt: Runtime): void {
  const { runs } = rt;
  const id = (params: unknown) => parseInput(idParamsSchema, params, 'path').id;

  v1.post('/v1/runs', { schema: schemas.createRun }, async (req, reply) => {
    const body = parseInput(submitRunBodySchema, req.body, 'body');
    const header = req.headers['idempotency-key'];
    if (Array.isArray(header)) throw new InvalidRequestError('send one Idempotency-Key header');
    const key = header === undefined ? undefined : parseInput(idempotencyKeySchema, header, 'Idempotency-Key');
    // W3C: a missing, repeated or malformed traceparent just starts a new trace.
    const traceparent = typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined;
    const { run, created } = await submitSpan(traceparent, async (runTrace, span) => {
      const submitted = await runs.submit(req.principal, body, key, runTrace);
      span.setAttribute(REIN_ATTR.runId, submitted.run.id);
      return submitted;
    });
    reply.header('location', `/v1/runs/${run.id}`);
    if (!created) reply.header('idempotent-replayed', 'true');
    return reply.status(created ? 202 : 200).send(run);
  });
  v1.get('/v1/runs/:id/snapshots', { schema: schemas.getSnapshots }, async (req) => runs.snapshots(req.principal, id(req.params)));
}
