import type { Principal } from '@rein/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  jsonRpcRequestSchema,
  pushConfigIdParamsSchema,
  pushConfigListParamsSchema,
  pushConfigSchema,
  sendMessageParamsSchema,
  taskIdParamsSchema,
} from '../features/a2a/a2a-schemas.js';
import type { A2aService, A2aStreamFrame } from '../features/a2a/a2a-service.js';
import type { RunService } from '../features/runs/run-service.js';
import type { WatchRun } from '../features/runs/watch-run.js';
import { ReinError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { type EventStreams, openSse } from './sse.js';

/** A2A's JSON-RPC error codes (the spec's, and JSON-RPC's own). */
const RPC = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** Implementation-defined: a Rein rule refused (403, 409, 410, 429 …); `data.code` says which. */
  refused: -32000,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  unsupportedOperation: -32004,
  extendedCardNotConfigured: -32007,
  versionNotSupported: -32009,
} as const;

type RpcId = string | number | null;

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** A Rein error as a JSON-RPC error: its stable code and status travel in `data`. */
function rpcError(err: unknown, method: string, logger: Logger): { code: number; message: string; data?: Record<string, unknown> } {
  if (err instanceof RpcError) return { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) };
  if (!(err instanceof ReinError) || err.status >= 500) {
    logger.error({ err, method }, 'a2a call failed');
    return { code: RPC.internal, message: 'internal error' };
  }
  const data = { code: err.code, status: err.status };
  if (err.status === 404) return { code: RPC.taskNotFound, message: err.message, data };
  if (err.code === 'run_finished' && method === 'CancelTask') return { code: RPC.taskNotCancelable, message: err.message, data };
  if (err.status === 400 || err.status === 422) return { code: RPC.invalidParams, message: err.message, data };
  return { code: RPC.refused, message: err.message, data };
}

const params = <T>(schema: z.ZodType<T>, value: unknown): T => {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  throw new RpcError(
    RPC.invalidParams,
    `invalid params: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'params'}: ${i.message}`).join('; ')}`,
  );
};

const agentParams = z.object({ agent: z.string().min(1).max(64) });

export interface A2aRoutesDeps {
  a2a: A2aService;
  runs: Pick<RunService, 'events'>;
  streams: EventStreams;
  logger: Logger;
}

/** Follows runs through the process's event streams (one blocking Redis connection for all of them). */
export const watchRuns = (runs: Pick<RunService, 'events'>, streams: EventStreams): WatchRun =>
  async function* (principal: Principal, runId: string, signal: AbortSignal) {
    yield* streams.follow(await runs.events(principal, runId), '0', signal);
  };

/** The Agent Card of each agent (public, as A2A discovery expects), outside the authenticated scope. */
export function registerA2aCard(app: FastifyInstance, a2a: A2aService): void {
  app.get('/a2a/:agent/.well-known/agent-card.json', { schema: { hide: true } }, async (req) => {
    const { agent } = params(agentParams, req.params);
    return a2a.card(agent, `${req.protocol}://${req.host}/a2a/${encodeURIComponent(agent)}`);
  });
}

/**
 * `POST /a2a/:agent`: A2A 1.0 over JSON-RPC, in the authenticated scope (a Rein key or
 * token as bearer). Streaming methods answer server-sent events, each a JSON-RPC response.
 */
export function registerA2aRoutes(scope: FastifyInstance, deps: A2aRoutesDeps): void {
  const { a2a, streams } = deps;
  const watch = watchRuns(deps.runs, streams);

  scope.post('/a2a/:agent', { schema: { hide: true } }, async (req, reply) => {
    const { agent } = params(agentParams, req.params);
    const envelope = jsonRpcRequestSchema.safeParse(req.body);
    if (!envelope.success) return reply.send(failure(null, { code: RPC.invalidRequest, message: 'not a JSON-RPC 2.0 request' }));
    const { id = null, method } = envelope.data;
    const version = req.headers['a2a-version'];
    try {
      if (typeof version === 'string' && version !== '' && !version.startsWith('1.'))
        throw new RpcError(RPC.versionNotSupported, `A2A ${version} is not served here; send A2A-Version: 1.0`);
      const body = envelope.data.params;
      switch (method) {
        case 'SendMessage':
          return reply.send(
            success(id, {
              task: await held(req, reply, (signal) =>
                a2a.send(req.principal, agent, params(sendMessageParamsSchema, body), watch, signal),
              ),
            }),
          );
        case 'SendStreamingMessage': {
          const send = params(sendMessageParamsSchema, body);
          const configuration = { ...send.configuration, returnImmediately: true };
          return stream(req, reply, id, async (signal) => {
            const task = await a2a.send(req.principal, agent, { ...send, configuration }, watch, signal);
            return a2a.updates(req.principal, agent, task.id, watch, signal);
          });
        }
        case 'SubscribeToTask': {
          const { id: taskId } = params(taskIdParamsSchema, body);
          const task = await a2a.get(req.principal, agent, taskId);
          if (['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'].includes(task.status.state))
            throw new RpcError(RPC.unsupportedOperation, `task ${taskId} is already ${task.status.state}`);
          return stream(req, reply, id, async (signal) => a2a.updates(req.principal, agent, taskId, watch, signal));
        }
        case 'GetTask':
          return reply.send(success(id, await a2a.get(req.principal, agent, params(taskIdParamsSchema, body).id)));
        case 'CancelTask':
          return reply.send(success(id, await a2a.cancel(req.principal, agent, params(taskIdParamsSchema, body).id)));
        case 'CreateTaskPushNotificationConfig':
          return reply.send(success(id, await a2a.createPushConfig(req.principal, agent, params(pushConfigSchema, body))));
        case 'GetTaskPushNotificationConfig': {
          const { taskId, id: configId } = params(pushConfigIdParamsSchema, body);
          return reply.send(success(id, await a2a.getPushConfig(req.principal, agent, taskId, configId)));
        }
        case 'ListTaskPushNotificationConfigs':
          return reply.send(success(id, await a2a.listPushConfigs(req.principal, agent, params(pushConfigListParamsSchema, body).taskId)));
        case 'DeleteTaskPushNotificationConfig': {
          const { taskId, id: configId } = params(pushConfigIdParamsSchema, body);
          await a2a.deletePushConfig(req.principal, agent, taskId, configId);
          return reply.send(success(id, {}));
        }
        case 'GetExtendedAgentCard':
          throw new RpcError(RPC.extendedCardNotConfigured, 'the public card is the whole card');
        default:
          throw new RpcError(RPC.methodNotFound, `method ${method} is not served here`);
      }
    } catch (err) {
      if (reply.sent) return reply;
      return reply.send(failure(id, rpcError(err, method, deps.logger)));
    }
  });

  /** A blocking call holds one of the caller's stream slots while it waits, and stops waiting when the client goes. */
  async function held<T>(req: FastifyRequest, reply: FastifyReply, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const release = streams.hold(req.principal);
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.on('close', onClose);
    try {
      return await call(gone.signal);
    } finally {
      reply.raw.off('close', onClose);
      release();
    }
  }

  /** Opens the SSE answer once the first frames are known (an error before then is a plain JSON-RPC error). */
  async function stream(
    req: FastifyRequest,
    reply: FastifyReply,
    id: RpcId,
    open: (signal: AbortSignal) => Promise<AsyncGenerator<A2aStreamFrame>>,
  ): Promise<FastifyReply> {
    const release = streams.hold(req.principal);
    const gone = new AbortController();
    try {
      const frames = await open(gone.signal);
      const first = await frames.next();
      const res = openSse(reply, () => gone.abort());
      const write = (frame: A2aStreamFrame) =>
        res.write(frame === null ? ': heartbeat\n\n' : `data: ${JSON.stringify(success(id, frame))}\n\n`);
      try {
        if (!first.done) write(first.value);
        for await (const frame of frames) write(frame);
      } catch (err) {
        if (!gone.signal.aborted) res.write(`data: ${JSON.stringify(failure(id, rpcError(err, 'stream', deps.logger)))}\n\n`);
      } finally {
        res.end();
      }
      return reply;
    } finally {
      release();
    }
  }
}

const success = (id: RpcId, result: unknown) => ({ jsonrpc: '2.0' as const, id, result });
const failure = (id: RpcId, error: { code: number; message: string; data?: Record<string, unknown> }) => ({
  jsonrpc: '2.0' as const,
  id,
  error,
});
