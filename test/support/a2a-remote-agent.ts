import type { AddressInfo } from 'node:net';
import { type AgentCard, type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
// @ts-expect-error express ships no types here (the SDK's optional peer); only its app and listen are used
import express from 'express';

/**
 * A remote agent served by the official A2A SDK (its DefaultRequestHandler over express),
 * for Rein's `remoteAgents` to call. What it does follows the input: "hold" keeps the task
 * working until the test releases it (or it is cancelled), "question" asks for input (a
 * message into the same task answers it), "fail" fails; anything else completes with an
 * answer. It records what reached it.
 */
export interface RemoteAgentServer {
  url: string;
  /** Every message received, in order. */
  messages: Array<{ messageId: string; text: string; taskId: string }>;
  /** The authorization header of each request. */
  authorizations: string[];
  /** Task ids whose cancellation was asked. */
  cancelled: string[];
  /** Lets a held task complete. */
  release(taskId: string): void;
  /** The last state the agent published for the task. */
  stateOf(taskId: string): TaskState | undefined;
  close(): Promise<void>;
}

const textOf = (m: Message) => m.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const part = (value: string) => ({
  content: { $case: 'text' as const, value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});
const agentMessage = (taskId: string, contextId: string, value: string): Message => ({
  messageId: `${taskId}-status`,
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [part(value)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

export async function startRemoteAgent(opts: { name?: string; cardUrl?: (own: string) => string } = {}): Promise<RemoteAgentServer> {
  const messages: RemoteAgentServer['messages'] = [];
  const authorizations: string[] = [];
  const cancelled: string[] = [];
  const released = new Map<string, () => void>();
  const cancels = new Map<string, () => void>();
  const states = new Map<string, TaskState>();
  const contexts = new Map<string, string>();

  const status = (bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, said?: string) => {
    states.set(taskId, state);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state, timestamp: new Date().toISOString(), message: said ? agentMessage(taskId, contextId, said) : undefined },
        metadata: {},
      }),
    );
  };

  const executor: AgentExecutor = {
    async execute(ctx: RequestContext, bus: ExecutionEventBus) {
      const { taskId, contextId } = ctx;
      contexts.set(taskId, contextId);
      const input = textOf(ctx.userMessage);
      messages.push({ messageId: ctx.userMessage.messageId, text: input, taskId });
      const task: Task = {
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      };
      if (!ctx.task) bus.publish(AgentEvent.task(task));
      status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING);
      if (input.includes('hold')) {
        const ended = await new Promise<'released' | 'cancelled'>((resolve) => {
          released.set(taskId, () => resolve('released'));
          cancels.set(taskId, () => resolve('cancelled'));
        });
        if (ended === 'cancelled') return status(bus, taskId, contextId, TaskState.TASK_STATE_CANCELED, 'stopped as asked');
      }
      if (input.includes('question')) return status(bus, taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, 'Which order number?');
      if (input.includes('fail')) return status(bus, taskId, contextId, TaskState.TASK_STATE_FAILED, 'the ledger is closed today');
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'answer',
            name: 'answer',
            description: '',
            parts: [part(`helper answered: ${input}`)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
    },
    async cancelTask(taskId: string, bus: ExecutionEventBus) {
      cancelled.push(taskId);
      const held = cancels.get(taskId);
      if (held) return held();
      // A task waiting on a question runs nothing: it ends here (the SDK keeps its bus open for the answer).
      const contextId = contexts.get(taskId);
      if (contextId === undefined || states.get(taskId) !== TaskState.TASK_STATE_INPUT_REQUIRED) return;
      status(bus, taskId, contextId, TaskState.TASK_STATE_CANCELED, 'stopped as asked');
      bus.finished();
    },
  };

  const app = express();
  app.use((req: { headers: Record<string, string> }, _res: unknown, next: () => void) => {
    authorizations.push(req.headers.authorization ?? '');
    next();
  });
  const server = await new Promise<import('node:http').Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const own = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name: opts.name ?? 'helper',
    description: 'Answers questions about the ledger.',
    supportedInterfaces: [{ url: opts.cardUrl?.(own) ?? `${own}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    documentationUrl: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [
      {
        id: 'ledger',
        name: 'Ledger questions',
        description: 'Answers about the ledger.',
        tags: [],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
    iconUrl: undefined,
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));

  return {
    url: own,
    messages,
    authorizations,
    cancelled,
    release: (taskId) => released.get(taskId)?.(),
    stateOf: (taskId) => states.get(taskId),
    close: () =>
      new Promise<void>((resolve) => {
        for (const cancel of cancels.values()) cancel();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
