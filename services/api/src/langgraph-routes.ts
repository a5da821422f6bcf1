import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Principal, RunView } from '@rein/contract';
import { idempotencyKeySchema } from '@rein/contract';
import {
  type EventStreams,
  InvalidRequestError,
  type LangGraphService,
  type LgStreamMode,
  lastEventId,
  lgSchemas as lg,
  NotServedError,
  parseInput,
  type StoreService,
  takeOver,
} from '@rein/core/http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The SDK line this door is written and tested against (`@langchain/langgraph-sdk`). */
export const LANGGRAPH_SDK_VERSION = '1.15.0';

/** How long a stream waits for a client that stopped reading before it lets go of the run. */
const DRAIN_TIMEOUT_MS = 30_000;

/** Routes of the LangGraph API that Rein refuses, each with what to use instead (docs/langgraph-sdk.md lists them all). */
const NOT_SERVED: Array<[method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, instead: string]> = [
  ['POST', '/assistants', 'assistants are the app’s agents (defineAgent)'],
  ['PATCH', '/assistants/:assistant_id', 'assistants are the app’s agents (defineAgent)'],
  ['DELETE', '/assistants/:assistant_id', 'assistants are the app’s agents (defineAgent)'],
  ['POST', '/assistants/:assistant_id/versions', 'an agent’s versions are the app’s (GET /v1/versions)'],
  ['POST', '/assistants/:assistant_id/latest', 'promote an app version (POST /v1/versions/:v/promote)'],
  ['POST', '/threads/:thread_id/state', 'a thread’s state is what its runs committed; nothing writes it from outside'],
  ['PATCH', '/threads/:thread_id/state', 'a thread’s state is what its runs committed; nothing writes it from outside'],
  ['GET', '/threads/:thread_id/state/:checkpoint_id', 'read POST /threads/:thread_id/history with a checkpoint'],
  ['POST', '/threads/:thread_id/state/checkpoint', 'read POST /threads/:thread_id/history with a checkpoint'],
  ['POST', '/threads/prune', 'delete threads one by one'],
  ['DELETE', '/threads/:thread_id/runs/:run_id', 'runs stay for audit; cancel a live one'],
  ['POST', '/runs/batch', 'create runs one by one'],
  ['POST', '/runs/cancel', 'cancel runs one by one'],
];

const truthy = (v: string | undefined) => v === '1' || v === 'true';

function idempotencyKey(req: FastifyRequest): string | undefined {
  const header = req.headers['idempotency-key'];
  if (Array.isArray(header)) throw new InvalidRequestError('send one Idempotency-Key header');
  return header === undefined ? undefined : parseInput(idempotencyKeySchema, header, 'Idempotency-Key');
}

/** Writes one chunk; a client that stops reading gets DRAIN_TIMEOUT_MS, then the stream ends (the run goes on). */
async function write(res: ServerResponse, chunk: string, signal: AbortSignal): Promise<void> {
  if (res.write(chunk)) return;
  const drained = await Promise.race([
    once(res, 'drain', { signal }).then(() => true),
    new Promise<false>((resolve) => setTimeout(resolve, DRAIN_TIMEOUT_MS, false).unref()),
  ]).catch(() => false);
  if (!drained) res.destroy();
}

/**
 * The LangGraph API (`@langchain/langgraph-sdk`'s `Client`, pointed at `<api>/lg`): a
 * translator over the run, approval and schedule services, mounted in its own
 * authenticated scope (the SDK's `x-api-key` carries a Rein key).
 */
export function registerLangGraphRoutes(scope: FastifyInstance, lgs: LangGraphService, streams: EventStreams, store: StoreService): void {
  const threadId = (req: FastifyRequest) => parseInput(lg.threadPathSchema, req.params, 'path').thread_id;
  const runPath = (req: FastifyRequest) => parseInput(lg.runPathSchema, req.params, 'path');
  const assistantId = (req: FastifyRequest) => parseInput(lg.assistantPathSchema, req.params, 'path').assistant_id;
  const cronId = (req: FastifyRequest) => parseInput(lg.cronPathSchema, req.params, 'path').cron_id;
  const runBody = (req: FastifyRequest) => parseInput(lg.runCreateSchema, req.body, 'body');

  /** A long answer holds one of the caller's stream slots; a client that leaves early may cancel its run (`on_disconnect`). */
  function watch(req: FastifyRequest, reply: FastifyReply, run: RunView, onDisconnect: 'cancel' | 'continue' | null | undefined) {
    const release = streams.hold(req.principal);
    const gone = new AbortController();
    reply.raw.on('close', () => {
      if (reply.raw.writableFinished) return;
      gone.abort();
      if (onDisconnect === 'cancel') lgs.runs.cancelOnDisconnect(req.principal, run.id);
    });
    return { signal: gone.signal, release };
  }

  async function wait(req: FastifyRequest, reply: FastifyReply, thread: string | null) {
    const body = runBody(req);
    const { run, from } = await lgs.runs.start(req.principal, thread, body, idempotencyKey(req));
    const { signal, release } = watch(req, reply, run, body.on_disconnect);
    try {
      const values = await lgs.runs.settle(req.principal, run, from, signal);
      return reply.header('content-location', runLocation(run)).send(values);
    } finally {
      release();
    }
  }

  const runLocation = (run: RunView) => (run.sessionId ? `/lg/threads/${run.sessionId}/runs/${run.id}` : `/lg/runs/${run.id}`);

  async function stream(
    req: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    run: RunView,
    modes: string[] | undefined,
    from: string,
    onDisconnect: 'cancel' | 'continue' | null | undefined,
  ) {
    const served = new Set((modes?.length ? modes : ['values']) as LgStreamMode[]);
    const { signal, release } = watch(req, reply, run, onDisconnect);
    const res = takeOver(reply);
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'content-location': runLocation(run),
    });
    try {
      for await (const part of lgs.runs.parts(principal, run, served, from, signal)) {
        if (signal.aborted || res.destroyed) break;
        if (!part) await write(res, ': heartbeat\n\n', signal);
        else await write(res, `${part.id ? `id: ${part.id}\n` : ''}event: ${part.event}\ndata: ${JSON.stringify(part.data)}\n\n`, signal);
      }
    } catch (err) {
      if (!signal.aborted) {
        req.log.warn({ err: (err as Error).message }, 'langgraph stream ended');
        if (!res.destroyed)
          res.write(`event: error\ndata: ${JSON.stringify({ error: 'stream_failed', message: 'the stream ended early' })}\n\n`);
      }
    } finally {
      release();
      res.end();
    }
  }

  async function startStream(req: FastifyRequest, reply: FastifyReply, thread: string | null) {
    const body = runBody(req);
    const { run, from } = await lgs.runs.start(req.principal, thread, body, idempotencyKey(req));
    await stream(req, reply, req.principal, run, body.stream_mode, from, body.on_disconnect);
  }

  scope.get('/info', async () => ({
    version: LANGGRAPH_SDK_VERSION,
    server: 'rein',
    flags: { assistants: true, crons: true, store: true },
  }));

  // The store: the caller's items (a tenant admin's: the tenant's shared space), features/store/store-service.ts.
  scope.put('/store/items', async (req, reply) => {
    const body = parseInput(lg.storePutSchema, req.body, 'body');
    await store.put(req.principal, body);
    return reply.code(204).send();
  });
  scope.get('/store/items', async (req) => {
    const q = parseInput(lg.storeGetQuerySchema, req.query, 'query');
    return store.get(req.principal, q.namespace === '' ? [] : q.namespace.split('.'), q.key, q.refresh_ttl === 'true');
  });
  scope.delete('/store/items', async (req, reply) => {
    const body = parseInput(lg.storeDeleteSchema, req.body, 'body');
    await store.delete(req.principal, body.namespace, body.key);
    return reply.code(204).send();
  });
  scope.post('/store/items/search', async (req) => {
    const q = parseInput(lg.storeSearchSchema, req.body ?? {}, 'body');
    return store.search(req.principal, {
      ...q,
      filter: q.filter ?? undefined,
      query: q.query ?? undefined,
      refresh_ttl: q.refresh_ttl ?? undefined,
    });
  });
  scope.post('/store/namespaces', async (req) => {
    const q = parseInput(lg.storeNamespacesSchema, req.body ?? {}, 'body');
    return store.namespaces(req.principal, {
      ...q,
      prefix: q.prefix ?? undefined,
      suffix: q.suffix ?? undefined,
      max_depth: q.max_depth ?? undefined,
    });
  });

  scope.post('/assistants/search', async (req) => lgs.assistants.search(parseInput(lg.assistantSearchSchema, req.body, 'body')));
  scope.post(
    '/assistants/count',
    async (req) => lgs.assistants.search({ ...parseInput(lg.assistantSearchSchema, req.body, 'body'), limit: 1000, offset: 0 }).length,
  );
  scope.get('/assistants/:assistant_id', async (req) => lgs.assistants.get(assistantId(req)));
  scope.get('/assistants/:assistant_id/graph', async (req) => lgs.assistants.graph(assistantId(req)));
  scope.get('/assistants/:assistant_id/schemas', async (req) => lgs.assistants.schemas(assistantId(req)));
  // An agent has no subgraphs (its sub-agents are runs of their own): an empty map, once it is known to exist.
  scope.get('/assistants/:assistant_id/subgraphs', async (req) => {
    lgs.assistants.get(assistantId(req));
    return {};
  });

  scope.post('/threads', async (req) => lgs.threads.create(req.principal, parseInput(lg.threadCreateSchema, req.body, 'body')));
  scope.post('/threads/search', async (req) => lgs.threads.search(req.principal, parseInput(lg.threadSearchSchema, req.body, 'body')));
  scope.post(
    '/threads/count',
    async (req) =>
      (await lgs.threads.search(req.principal, { ...parseInput(lg.threadSearchSchema, req.body, 'body'), limit: 1000, offset: 0 })).length,
  );
  scope.post('/threads/:thread_id/copy', async (req) => lgs.threads.copy(req.principal, threadId(req)));
  scope.get('/threads/:thread_id', async (req) => lgs.threads.get(req.principal, threadId(req)));
  scope.patch('/threads/:thread_id', async (req) =>
    lgs.threads.update(req.principal, threadId(req), parseInput(lg.threadUpdateSchema, req.body, 'body').metadata),
  );
  scope.delete('/threads/:thread_id', async (req, reply) => {
    await lgs.threads.remove(req.principal, threadId(req));
    return reply.status(204).send();
  });
  scope.get('/threads/:thread_id/state', async (req) => lgs.threads.state(req.principal, threadId(req)));
  scope.post('/threads/:thread_id/history', async (req) =>
    lgs.threads.history(req.principal, threadId(req), parseInput(lg.historySchema, req.body, 'body')),
  );
  scope.get('/threads/:thread_id/stream', async (req, reply) => {
    const q = parseInput(lg.joinStreamQuerySchema, req.query, 'query');
    const run = await lgs.runs.current(req.principal, threadId(req));
    const modes = q.stream_mode === undefined ? undefined : [q.stream_mode].flat();
    await stream(req, reply, req.principal, run, modes, lastEventId(req.headers, req.query), undefined);
  });

  scope.post('/threads/:thread_id/runs', async (req, reply) => {
    const { run } = await lgs.runs.start(req.principal, threadId(req), runBody(req), idempotencyKey(req));
    return reply.header('content-location', runLocation(run)).send(lgs.runs.lgRun(run));
  });
  scope.post('/runs', async (req, reply) => {
    const { run } = await lgs.runs.start(req.principal, null, runBody(req), idempotencyKey(req));
    return reply.header('content-location', runLocation(run)).send(lgs.runs.lgRun(run));
  });
  scope.post('/threads/:thread_id/runs/wait', async (req, reply) => wait(req, reply, threadId(req)));
  scope.post('/runs/wait', async (req, reply) => wait(req, reply, null));
  scope.post('/threads/:thread_id/runs/stream', async (req, reply) => startStream(req, reply, threadId(req)));
  scope.post('/runs/stream', async (req, reply) => startStream(req, reply, null));
  scope.get('/threads/:thread_id/runs', async (req) =>
    lgs.runs.list(req.principal, threadId(req), parseInput(lg.runListQuerySchema, req.query, 'query')),
  );
  scope.get('/threads/:thread_id/runs/:run_id', async (req) => {
    const p = runPath(req);
    return lgs.runs.get(req.principal, p.thread_id, p.run_id);
  });
  scope.post('/threads/:thread_id/runs/:run_id/cancel', async (req, reply) => {
    const p = runPath(req);
    const q = parseInput(lg.cancelQuerySchema, req.query, 'query');
    await lgs.runs.cancel(req.principal, p.thread_id, p.run_id, q.action);
    return reply.status(204).send();
  });
  scope.get('/threads/:thread_id/runs/:run_id/join', async (req, reply) => {
    const p = runPath(req);
    const q = parseInput(lg.joinStreamQuerySchema, req.query, 'query');
    const run = await lgs.runs.view(req.principal, p.thread_id, p.run_id);
    const { signal, release } = watch(req, reply, run, truthy(q.cancel_on_disconnect) ? 'cancel' : 'continue');
    try {
      return await lgs.runs.settle(req.principal, run, '0', signal);
    } finally {
      release();
    }
  });
  scope.get('/threads/:thread_id/runs/:run_id/stream', async (req, reply) => {
    const p = runPath(req);
    const q = parseInput(lg.joinStreamQuerySchema, req.query, 'query');
    const run = await lgs.runs.view(req.principal, p.thread_id, p.run_id);
    const modes = q.stream_mode === undefined ? undefined : [q.stream_mode].flat();
    await stream(
      req,
      reply,
      req.principal,
      run,
      modes,
      lastEventId(req.headers, req.query),
      truthy(q.cancel_on_disconnect) ? 'cancel' : 'continue',
    );
  });

  scope.post('/runs/crons', async (req) => lgs.crons.create(req.principal, null, parseInput(lg.cronCreateSchema, req.body, 'body')));
  scope.post('/threads/:thread_id/runs/crons', async (req) =>
    lgs.crons.create(req.principal, threadId(req), parseInput(lg.cronCreateSchema, req.body, 'body')),
  );
  scope.post('/runs/crons/search', async (req) => lgs.crons.search(req.principal, parseInput(lg.cronSearchSchema, req.body, 'body')));
  scope.post(
    '/runs/crons/count',
    async (req) =>
      (await lgs.crons.search(req.principal, { ...parseInput(lg.cronSearchSchema, req.body, 'body'), limit: 1000, offset: 0 })).length,
  );
  scope.patch('/runs/crons/:cron_id', async (req) =>
    lgs.crons.update(req.principal, cronId(req), parseInput(lg.cronUpdateSchema, req.body, 'body')),
  );
  scope.delete('/runs/crons/:cron_id', async (req, reply) => {
    await lgs.crons.remove(req.principal, cronId(req));
    return reply.status(204).send();
  });

  for (const [method, path, instead] of NOT_SERVED)
    scope.route({
      method,
      url: path,
      handler: async () => {
        throw new NotServedError(`${method} ${path}`, instead);
      },
    });
}
