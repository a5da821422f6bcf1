import {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { LegacyA2AError, LegacyJsonRpcTransportHandler, LegacyRestTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { type A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { Principal } from '@rein/contract';
import {
  pushConfigIdParamsSchema,
  pushConfigListParamsSchema,
  pushConfigSchema,
  sendMessageParamsSchema,
  taskIdParamsSchema,
} from '../features/a2a/a2a-schemas.js';
import type { A2aService, A2aStreamFrame } from '../features/a2a/a2a-service.js';
import type { WatchRun } from '../features/runs/watch-run.js';
import type { Logger } from '../shared/logger.js';
import { followable, RPC, RpcError, type RpcFailure, rpcError, rpcParams } from './a2a-rpc.js';

/**
 * A2A v0.3 over the same A2A service as 1.0. The SDK's v0.3 JSON-RPC handler reads v0.3
 * names and shapes, turns them into 1.0 requests and turns the answers back; Rein stands
 * behind it as a 1.0 request handler that takes the SDK's 1.0 objects as their JSON (the
 * 1.0 door's own schemas check them) and calls the service the 1.0 door calls, with the
 * caller's principal. So a v0.3 caller meets every rule a 1.0 caller meets.
 */
export interface V03Call {
  a2a: A2aService;
  principal: Principal;
  agent: string;
  /** The agent's JSON-RPC endpoint (its card names it). */
  endpoint: string;
  watch: WatchRun;
  /** Aborts when the client goes: a blocking send or a stream stops following the task. */
  signal: AbortSignal;
  /** A followed task has had nothing new for a while (a stream's heartbeat). */
  idle: () => void;
  logger: Logger;
}

/** A v0.3 JSON-RPC answer: one response, or for `message/stream` and `tasks/resubscribe` a stream of them. */
type V03Answer = { jsonrpc: '2.0'; id: string | number | null; result?: unknown; error?: RpcFailure };

/** A Rein refusal as the SDK's error: the v0.3 handler writes its code, message and `data` ({code, status}) unchanged. */
const sdkError = (f: RpcFailure) => new LegacyA2AError(f.code, f.message, f.data);

export function v03Door(call: V03Call) {
  const { a2a, principal, agent, watch, signal, logger } = call;
  /** Whether a Rein call was made: the SDK reads v0.3 params unchecked, so a fault before one is the caller's malformed params. */
  let reached = false;

  /** A service call, its refusal as the SDK's error. */
  async function translated<T>(method: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw sdkError(rpcError(err, method, logger));
    }
  }
  const rein = <T>(method: string, work: () => Promise<T>): Promise<T> => {
    reached = true;
    return translated(method, work);
  };

  async function* follow(frames: AsyncGenerator<A2aStreamFrame>): AsyncGenerator<StreamResponse> {
    try {
      for await (const frame of frames) {
        if (frame === null) call.idle();
        else yield StreamResponse.fromJSON(frame);
      }
    } catch (err) {
      throw sdkError(rpcError(err, 'stream', logger));
    }
  }

  const handler: A2ARequestHandler = {
    // Read before a stream's params are: not a call on the caller's behalf.
    getAgentCard: () => translated('GetAgentCard', async () => AgentCard.fromJSON(a2a.card(agent, call.endpoint))),
    getAuthenticatedExtendedAgentCard: async () => {
      throw sdkError({ code: RPC.extendedCardNotConfigured, message: 'the public card is the whole card' });
    },
    sendMessage: (req) =>
      rein('SendMessage', async () =>
        Task.fromJSON(
          await a2a.send(principal, agent, rpcParams(sendMessageParamsSchema, SendMessageRequest.toJSON(req)), watch, signal, '0.3'),
        ),
      ),
    async *sendMessageStream(req) {
      const task = await rein('SendStreamingMessage', async () => {
        const send = rpcParams(sendMessageParamsSchema, SendMessageRequest.toJSON(req));
        const configuration = { ...send.configuration, returnImmediately: true };
        return a2a.send(principal, agent, { ...send, configuration }, watch, signal, '0.3');
      });
      yield* follow(a2a.updates(principal, agent, task.id, watch, signal));
    },
    async *resubscribe(req) {
      const { id } = await rein('SubscribeToTask', async () => rpcParams(taskIdParamsSchema, SubscribeToTaskRequest.toJSON(req)));
      await rein('SubscribeToTask', async () => followable(await a2a.get(principal, agent, id)));
      yield* follow(a2a.updates(principal, agent, id, watch, signal));
    },
    getTask: (req) =>
      rein('GetTask', async () =>
        Task.fromJSON(await a2a.get(principal, agent, rpcParams(taskIdParamsSchema, GetTaskRequest.toJSON(req)).id)),
      ),
    cancelTask: (req) =>
      rein('CancelTask', async () =>
        Task.fromJSON(await a2a.cancel(principal, agent, rpcParams(taskIdParamsSchema, CancelTaskRequest.toJSON(req)).id)),
      ),
    createTaskPushNotificationConfig: (req) =>
      rein('CreateTaskPushNotificationConfig', async () =>
        TaskPushNotificationConfig.fromJSON(
          await a2a.createPushConfig(principal, agent, rpcParams(pushConfigSchema, TaskPushNotificationConfig.toJSON(req)), '0.3'),
        ),
      ),
    getTaskPushNotificationConfig: (req) =>
      rein('GetTaskPushNotificationConfig', async () => {
        // v0.3 may name no config ("the task's config"): the caller's only one, if it holds exactly one.
        if (!req.id) {
          const { configs } = await a2a.listPushConfigs(
            principal,
            agent,
            rpcParams(pushConfigListParamsSchema, { taskId: req.taskId }).taskId,
          );
          if (configs.length !== 1)
            throw new RpcError(
              RPC.invalidParams,
              `task ${req.taskId} holds ${configs.length} of your configs: name one (pushNotificationConfigId)`,
            );
          return TaskPushNotificationConfig.fromJSON(configs[0]);
        }
        const { taskId, id } = rpcParams(pushConfigIdParamsSchema, GetTaskPushNotificationConfigRequest.toJSON(req));
        return TaskPushNotificationConfig.fromJSON(await a2a.getPushConfig(principal, agent, taskId, id));
      }),
    listTaskPushNotificationConfigs: (req) =>
      rein('ListTaskPushNotificationConfigs', async () => {
        const { taskId } = rpcParams(pushConfigListParamsSchema, ListTaskPushNotificationConfigsRequest.toJSON(req));
        return ListTaskPushNotificationConfigsResponse.fromJSON(await a2a.listPushConfigs(principal, agent, taskId));
      }),
    deleteTaskPushNotificationConfig: (req) =>
      rein('DeleteTaskPushNotificationConfig', async () => {
        const { taskId, id } = rpcParams(pushConfigIdParamsSchema, DeleteTaskPushNotificationConfigRequest.toJSON(req));
        await a2a.deletePushConfig(principal, agent, taskId, id);
      }),
    listTasks: async () => {
      throw sdkError({ code: RPC.methodNotFound, message: 'tasks/list is not a v0.3 method' });
    },
  };
  const transport = new LegacyJsonRpcTransportHandler(handler);

  return {
    /** One v0.3 request: its response, or for the streaming methods a stream of responses. */
    async handle(body: Record<string, unknown>): Promise<V03Answer | AsyncGenerator<V03Answer>> {
      const answer = await transport.handle(withOneScheme(body), new ServerCallContext());
      if (Symbol.asyncIterator in answer) return answer as AsyncGenerator<V03Answer>;
      if (answer.error?.code === RPC.internal && !reached)
        return { ...answer, error: { code: RPC.invalidParams, message: `invalid params: ${answer.error.message}` } } as V03Answer;
      return answer as V03Answer;
    },
  };
}

/** A v0.3 push config's `authentication` with its first scheme only (what 1.0 keeps). */
function firstScheme(config: unknown): unknown {
  const auth = (config as { authentication?: { schemes?: unknown } } | null)?.authentication;
  if (!Array.isArray(auth?.schemes) || auth.schemes.length <= 1) return config;
  return { ...(config as object), authentication: { ...auth, schemes: auth.schemes.slice(0, 1) } };
}

/**
 * The request with each push config's schemes cut to the first before the SDK reads it:
 * the SDK keeps the first too, but writes the caller's schemes to the console as it does,
 * which would let any caller write lines (newlines included) into the process's log.
 */
function withOneScheme(body: Record<string, unknown>): Record<string, unknown> {
  const params = body.params as Record<string, unknown> | undefined;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return body;
  const configuration = params.configuration;
  return {
    ...body,
    params: {
      ...params,
      ...('pushNotificationConfig' in params ? { pushNotificationConfig: firstScheme(params.pushNotificationConfig) } : {}),
      ...(typeof configuration === 'object' && configuration !== null && 'pushNotificationConfig' in configuration
        ? { configuration: { ...configuration, pushNotificationConfig: firstScheme(configuration.pushNotificationConfig) } }
        : {}),
    },
  };
}

/** An error in a v0.3 stream as the SDK's v0.3 handler writes errors. */
export const v03Failure = (err: unknown): RpcFailure => LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err);

/**
 * The v0.3 card: the SDK's translation of the 1.0 card (its v0.3 interface as `url`,
 * `preferredTransport` and `protocolVersion`), with the 1.0 interfaces embedded as the SDK's
 * own card router does, so a 1.0 client that sent no `A2A-Version` still finds them. The
 * translation is reachable only through a handler's extended-card call, which reads nothing
 * else of its handler.
 */
export async function v03Card(card: ReturnType<A2aService['card']>): Promise<Record<string, unknown>> {
  const core = AgentCard.fromJSON(card);
  const cardOnly: Pick<A2ARequestHandler, 'getAuthenticatedExtendedAgentCard'> = { getAuthenticatedExtendedAgentCard: async () => core };
  const legacy = await new LegacyRestTransportHandler(cardOnly as A2ARequestHandler).getAuthenticatedExtendedAgentCard(
    new ServerCallContext(),
  );
  return { ...legacy, supportedInterfaces: card.supportedInterfaces };
}
