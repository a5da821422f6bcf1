import {
  isLegacyJsonRpcMethod,
  LEGACY_METHOD_MESSAGE_SEND,
  LEGACY_METHOD_MESSAGE_STREAM,
  LEGACY_METHOD_TASKS_RESUBSCRIBE,
} from '@a2a-js/sdk/compat/v0_3';
import type { Principal } from '@rein/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type JsonRpcRequest,
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
import type { Logger } from '../shared/logger.js';
import {
  agentOf,
  failure,
  followable,
  rpcParams as params,
  RPC,
  RpcError,
  type RpcFailure,
  type RpcId,
  rpcError,
  success,
} from './a2a-rpc.js';
import { v03Card, v03Door, v03Failure } from './a2a-v03.js';
import { type EventStreams, openSse } from './sse.js';

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

/** An agent's JSON-RPC endpoint, on the host the client asked for. */
const endpointOf = (req: FastifyRequest, agent: string) => `${req.protocol}://${req.host}/a2a/${encodeURIComponent(agent)}`;

/** A request that names no A2A version is a v0.3 one (A2A 1.0's rule). */
const asksV03 = (req: FastifyRequest) => {
  const version = req.headers['a2a-version'];
  return typeof version !== 'string' || version === '' || version.startsWith('0.');
};

/**
 * The Agent Card of each agent (public, as A2A discovery expects), outside the authenticated
 * scope: 1.0's to a client that says `A2A-Version: 1.0` (the SDK's client does), v0.3's
 * (which embeds 1.0's interfaces) to one that names no version, as v0.3 clients do.
 */
export function registerA2aCard(app: FastifyInstance, a2a: A2aService): void {
  app.get('/a2a/:agent/.well-known/agent-card.json', { schema: { hide: true } }, async (req, reply) => {
    const agent = agentOf(req.params);
    const card = a2a.card(agent, endpointOf(req, agent));
    reply.header('vary', 'A2A-Version');
    return asksV03(req) ? v03Card(card) : card;
  });
}

/**
 * `POST /a2a/:agent`: A2A 1.0 over JSON-RPC, in the authenticated scope (a Rein key or
 * token as bearer), and v0.3's method names (`message/send` …) through the SDK's v0.3
 * handler over the same service. Streaming methods answer server-sent events, each a
 * JSON-RPC response.
 */
export function registerA2aRoutes(scope: FastifyInstance, deps: A2aRoutesDeps): void {
  const { a2a, streams } = deps;
  const watch = watchRuns(deps.runs, streams);

  scope.post('/a2a/:agent', { schema: { hide: true } }, async (req, reply) => {
    const agent = agentOf(req.params);
    const envelope = jsonRpcRequestSchema.safeParse(req.body);
    if (!envelope.success) return reply.send(failure(null, { code: RPC.invalidRequest, message: 'not a JSON-RPC 2.0 request' }));
    const { id = null, method } = envelope.data;
    if (isLegacyJsonRpcMethod(method)) return v03(req, reply, agent, envelope.data);
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
          // Awaited, so a refusal before the events start (no stream slot left) is the catch's JSON-RPC error.
          return await stream(req, reply, id, async (signal, idle) => {
            const task = await a2a.send(req.principal, agent, { ...send, configuration }, watch, signal);
            return enveloped(id, a2a.updates(req.principal, agent, task.id, watch, signal), idle);
          });
        }
        case 'SubscribeToTask': {
          const { id: taskId } = params(taskIdParamsSchema, body);
          followable(await a2a.get(req.principal, agent, taskId));
          return await stream(req, reply, id, async (signal, idle) =>
            enveloped(id, a2a.updates(req.principal, agent, taskId, watch, signal), idle),
          );
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

  /**
   * A v0.3 request, through the SDK's v0.3 handler over the same service: a blocking send
   * holds a stream slot and the streaming methods answer SSE, as 1.0's do.
   */
  async function v03(req: FastifyRequest, reply: FastifyReply, agent: string, body: JsonRpcRequest): Promise<FastifyReply> {
    const door = (signal: AbortSignal, idle: () => void) =>
      v03Door({ a2a, principal: req.principal, agent, endpoint: endpointOf(req, agent), watch, signal, idle, logger: deps.logger });
    const id = body.id ?? null;
    try {
      switch (body.method) {
        case LEGACY_METHOD_MESSAGE_SEND:
          return reply.send(await held(req, reply, (signal) => door(signal, () => {}).handle(body)));
        case LEGACY_METHOD_MESSAGE_STREAM:
        case LEGACY_METHOD_TASKS_RESUBSCRIBE:
          return await stream(req, reply, id, (signal, idle) => door(signal, idle).handle(body), v03Failure, true);
        default:
          return reply.send(await door(new AbortController().signal, () => {}).handle(body));
      }
    } catch (err) {
      if (reply.sent) return reply;
      return reply.send(failure(id, rpcError(err, body.method, deps.logger)));
    }
  }

  /**
   * Answers server-sent events, each a JSON-RPC response; `idle` writes a heartbeat while
   * nothing happens. The events start with the first response, so an error before it (or a
   * plain answer) is sent as plain JSON-RPC; `eager` starts them at once, errors included, as
   * v0.3 servers did and v0.3 clients expect.
   */
  async function stream(
    req: FastifyRequest,
    reply: FastifyReply,
    id: RpcId,
    open: (signal: AbortSignal, idle: () => void) => Promise<AsyncGenerator<object> | object>,
    fail: (err: unknown) => RpcFailure = (err) => rpcError(err, 'stream', deps.logger),
    eager = false,
  ): Promise<FastifyReply> {
    const release = streams.hold(req.principal);
    const gone = new AbortController();
    let sse: FastifyReply['raw'] | undefined;
    const start = () => {
      sse ??= openSse(reply, () => gone.abort());
      return sse;
    };
    const write = (response: object) => start().write(`data: ${JSON.stringify(response)}\n\n`);
    const idle = () => {
      sse?.write(': heartbeat\n\n');
    };
    try {
      if (eager) start();
      const answer = await open(gone.signal, idle);
      if (!(Symbol.asyncIterator in answer)) {
        if (!sse) return reply.send(answer);
        write(answer);
        return reply;
      }
      try {
        for await (const response of answer) write(response);
        start();
      } catch (err) {
        if (!sse) return reply.send(failure(id, fail(err)));
        if (!gone.signal.aborted) write(failure(id, fail(err)));
      }
      return reply;
    } finally {
      sse?.end();
      release();
    }
  }
}

/** A 1.0 task stream as JSON-RPC responses; a `null` frame (nothing new for a while) is a heartbeat. */
async function* enveloped(id: RpcId, frames: AsyncGenerator<A2aStreamFrame>, idle: () => void): AsyncGenerator<object> {
  for await (const frame of frames) {
    if (frame === null) idle();
    else yield success(id, frame);
  }
}
