import { isTerminal, type TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelledNotificationSchema,
  type CreateTaskResult,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Task as McpTask,
  type Tool as McpTool,
  RELATED_TASK_META_KEY,
} from '@modelcontextprotocol/sdk/types.js';
import { type Principal, type RunStatus, type RunView, submitRunBodySchema } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { isSettled } from '../../policy/run/run-settled.js';
import { ConflictError, NotFoundError, ReinError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { RunService } from '../runs/run-service.js';
import type { WatchRun } from '../runs/watch-run.js';
import { approvalConsoleUrl } from '../webhooks/webhook-dispatcher.js';

export interface McpDoorDeps {
  runs: Pick<RunService, 'submit' | 'get' | 'cancel'>;
  agents: readonly AgentProfile[];
  version: string;
  logger: Logger;
  /** The approver console's public URL (REIN_CONSOLE_URL): a parked call names each approval's page there. */
  consoleUrl?: string | undefined;
}

/** A tool call's arguments: the run's input, and the session it continues. */
const callArgumentsSchema = submitRunBodySchema.pick({ input: true, sessionId: true }).strict();

/** One MCP tool per agent, named as the agent (its output schema when it is typed). */
function agentTools(agents: readonly AgentProfile[]): McpTool[] {
  return agents.map((agent) => {
    const output = agent.output?.jsonSchema.schema;
    return {
      name: agent.name,
      description: agent.description ?? `Runs the Rein agent ${agent.name} on the input and answers with its final answer.`,
      inputSchema: {
        type: 'object',
        properties: {
          input: { type: 'string', minLength: 1, maxLength: 8000, description: "the user's message to the agent" },
          sessionId: { type: 'string', description: 'continue this conversation (letters, digits, ".", "_", "~", "-")' },
        },
        required: ['input'],
        additionalProperties: false,
      },
      // MCP's output schemas describe objects; an agent typed otherwise answers in text only.
      ...(output?.type === 'object' ? { outputSchema: output as McpTool['outputSchema'] } : {}),
      annotations: { readOnlyHint: false, openWorldHint: true },
      // A run can take hours (a person decides its writes): a client may run it as a task it polls.
      execution: { taskSupport: 'optional' },
    };
  });
}

/** Who must decide what, and where: a page where a person decides, never a link that decides (a model may read this). */
const approvalLine = (consoleUrl: string | undefined, a: RunView['pendingApprovals'][number]) =>
  `approval ${a.id}: ${a.summary} (needs ${a.requiredRole}; decide at ${
    consoleUrl ? approvalConsoleUrl(consoleUrl, a.id) : `POST /v1/approvals/${a.id}/approve on the approver`
  })`;

/** A settled (or parked) run as the tool call's result. */
function answer(consoleUrl: string | undefined, run: RunView, typed: boolean): CallToolResult {
  const meta = { 'rein/run': { runId: run.id, status: run.status, ...(run.reason ? { reason: run.reason } : {}) } };
  if (run.status === 'succeeded') {
    return {
      content: [{ type: 'text', text: run.finalAnswer ?? '' }],
      ...(typed && run.output !== undefined ? { structuredContent: run.output as Record<string, unknown> } : {}),
      _meta: meta,
    };
  }
  if (run.status === 'pending_approval') {
    const approvals = run.pendingApprovals.filter((a) => a.status === 'pending');
    const lines = approvals.map((a) => `- ${approvalLine(consoleUrl, a)}`);
    return {
      // Not the agent's answer (yet): a client must not take it for one.
      isError: true,
      content: [{ type: 'text', text: `Run ${run.id} waits for a person to decide:\n${lines.join('\n')}\nIt goes on once decided.` }],
      _meta: {
        'rein/run': {
          ...meta['rein/run'],
          approvals: approvals.map((a) => ({
            id: a.id,
            summary: a.summary,
            requiredRole: a.requiredRole,
            expiresAt: a.expiresAt,
            ...(consoleUrl ? { consoleUrl: approvalConsoleUrl(consoleUrl, a.id) } : {}),
          })),
        },
      },
    };
  }
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `Run ${run.id} ended ${run.status}${run.reason ? ` (${run.reason})` : ''}${run.finalAnswer ? `: ${run.finalAnswer}` : ''}`,
      },
    ],
    _meta: meta,
  };
}

/** A run's status as an MCP task's (every status named, so a new one is placed here by the compiler). */
const TASK_STATUS: Record<RunStatus, McpTask['status']> = {
  queued: 'working',
  running: 'working',
  waiting: 'working',
  pending_approval: 'input_required',
  succeeded: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

/**
 * A run as an MCP task (MCP 2025-11-25's tasks, experimental in the SDK): the task id is
 * the run id, so a task lives as long as its run and any API process answers for it.
 */
function taskOf(consoleUrl: string | undefined, run: RunView): McpTask {
  const status = TASK_STATUS[run.status];
  const message =
    run.status === 'pending_approval'
      ? `waits for a person to decide: ${run.pendingApprovals
          .filter((a) => a.status === 'pending')
          .map((a) => approvalLine(consoleUrl, a))
          .join('; ')}`
      : run.reason
        ? `${run.status}: ${run.reason}`
        : run.status;
  return {
    taskId: run.id,
    status,
    statusMessage: message,
    ttl: null,
    createdAt: run.createdAt,
    lastUpdatedAt: run.updatedAt,
    pollInterval: 1_000,
  };
}

/** The caller's runs as tasks, read through the run service (a run of another caller is no task of theirs). */
function taskStore(deps: McpDoorDeps, principal: Principal, typed: (agent: string) => boolean): TaskStore {
  const runOf = (id: string) =>
    deps.runs.get(principal, id).catch((err) => {
      if (err instanceof NotFoundError) return null;
      throw err;
    });
  return {
    // Tasks are made by tools/call (a run); nothing else asks for one.
    createTask: async () => {
      throw new McpError(ErrorCode.InvalidRequest, 'tasks are created by tools/call');
    },
    getTask: async (id) => {
      const run = await runOf(id);
      return run ? taskOf(deps.consoleUrl, run) : null;
    },
    // The run is the result: nothing to store.
    storeTaskResult: async () => {},
    getTaskResult: async (id) => {
      const run = await runOf(id);
      if (!run) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${id}`);
      return answer(deps.consoleUrl, run, typed(run.agent));
    },
    // tasks/cancel: a run that ended meanwhile answers as it ended; a run that could not be
    // cancelled is an error, never a task answered as if it had been.
    updateTaskStatus: async (id, status) => {
      if (status !== 'cancelled') return;
      try {
        await deps.runs.cancel(principal, id);
      } catch (err) {
        if (err instanceof ConflictError) return;
        deps.logger.warn({ err, runId: id }, 'mcp: cancel failed');
        throw new McpError(ErrorCode.InternalError, `could not cancel task ${id}`);
      }
    },
    listTasks: async () => {
      throw new McpError(ErrorCode.MethodNotFound, 'tasks/list is not served: list runs with GET /v1/runs');
    },
  };
}

/**
 * Rein's agents as MCP tools: one tool per agent, named as the agent. A call runs the
 * agent as `POST /v1/runs` would for the same caller, reports the run's steps as
 * progress, and answers with the final answer (structured when the agent is typed). A
 * run parked for approval answers at once with what a person must do, rather than
 * holding the request for hours. Served stateless: a server per request.
 */
export function createMcpDoor(deps: McpDoorDeps) {
  const tools = agentTools(deps.agents);
  const byName = new Map(deps.agents.map((a) => [a.name, a]));
  /**
   * Runs of calls in flight on this process, by caller and request id: what a client's
   * cancellation names. Stateless, a server cannot tell one client of a caller from another,
   * and clients number their requests alike: while two calls share a key, a cancellation
   * naming it is ambiguous and cancels neither (never the other client's run).
   */
  const inFlight = new Map<string, string[]>();
  const callKey = (principal: Principal, requestId: string | number) => JSON.stringify([principal.tenantId, principal.userId, requestId]);

  const cancelQuietly = async (principal: Principal, runId: string) => {
    try {
      await deps.runs.cancel(principal, runId);
    } catch (err) {
      if (!(err instanceof ConflictError) && !(err instanceof NotFoundError)) deps.logger.warn({ err, runId }, 'mcp: cancel failed');
    }
  };

  const typed = (agent: string) => byName.get(agent)?.output?.jsonSchema.schema.type === 'object';

  return {
    /** An MCP server acting for `principal` for one HTTP request; `gone` aborts when the client goes. */
    server(principal: Principal, watch: WatchRun, gone: AbortSignal): Server {
      const store = taskStore(deps, principal, typed);
      const server = new Server(
        { name: 'rein', version: deps.version },
        { capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } }, cancel: {} } }, taskStore: store },
      );
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
      // tasks/result waits for the task's end on the run's event stream. The SDK's own handler polls
      // the task every second and keeps an abort listener per poll while held: a leak, for a task
      // parked for days.
      server.setRequestHandler(GetTaskPayloadRequestSchema, async (req, extra) => {
        const id = req.params.taskId;
        let task = await store.getTask(id);
        if (!task) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${id}`);
        if (!isTerminal(task.status))
          for await (const _ of watch(principal, id, extra.signal)) {
            task = await store.getTask(id);
            if (!task || isTerminal(task.status)) break;
          }
        if (!task || !isTerminal(task.status)) throw new McpError(ErrorCode.InvalidRequest, 'Request cancelled');
        const result = await store.getTaskResult(id);
        return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId: id } } };
      });
      server.setNotificationHandler(CancelledNotificationSchema, async (note) => {
        const runs = note.params.requestId === undefined ? [] : (inFlight.get(callKey(principal, note.params.requestId)) ?? []);
        if (runs.length === 1) await cancelQuietly(principal, runs[0] as string);
      });
      server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult | CreateTaskResult> => {
        const agent = byName.get(req.params.name);
        if (!agent) throw new McpError(ErrorCode.InvalidParams, `no tool ${req.params.name}`);
        // MCP 2025-11-25: bad arguments are the call's result, which a model can read and correct; an unknown tool is a protocol error.
        // A call asked as a task answers a task or an error: with no task to carry that result, it is the error.
        const refused = (text: string): CallToolResult => {
          if (req.params.task) throw new McpError(ErrorCode.InvalidParams, text);
          return { isError: true, content: [{ type: 'text', text }] };
        };
        const args = callArgumentsSchema.safeParse(req.params.arguments ?? {});
        if (!args.success)
          return refused(`invalid_request: ${args.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ')}`);
        let run: RunView;
        try {
          ({ run } = await deps.runs.submit(principal, { agent: agent.name, ...args.data }));
        } catch (err) {
          // A rule's refusal (quota, busy session, budget ceiling) is the call's result, not a protocol failure.
          if (err instanceof ReinError && err.status < 500) return refused(`${err.code}: ${err.message}`);
          throw err;
        }
        // As a task: answered at once; the client polls tasks/get and reads tasks/result.
        if (req.params.task) return { task: taskOf(deps.consoleUrl, run) };
        const key = callKey(principal, extra.requestId);
        const runId = run.id;
        inFlight.set(key, [...(inFlight.get(key) ?? []), runId]);
        const stop = new AbortController();
        const abort = () => stop.abort();
        extra.signal.addEventListener('abort', abort, { once: true });
        gone.addEventListener('abort', abort, { once: true });
        const progressToken = extra._meta?.progressToken;
        try {
          let step = -1;
          for await (const _ of watch(principal, run.id, stop.signal)) {
            if (isSettled(run)) break;
            run = await deps.runs.get(principal, run.id);
            if (progressToken !== undefined && run.step !== step) {
              step = run.step;
              await extra.sendNotification({
                method: 'notifications/progress',
                params: { progressToken, progress: run.step, message: `${run.status}, step ${run.step}` },
              });
            }
            if (isSettled(run)) break;
          }
          if (!isSettled(run)) {
            // The client cancelled or went away: the run it asked for ends too.
            await cancelQuietly(principal, run.id);
            run = await deps.runs.get(principal, run.id);
          }
          return answer(deps.consoleUrl, run, typed(agent.name));
        } finally {
          const left = (inFlight.get(key) ?? []).filter((id) => id !== runId);
          if (left.length > 0) inFlight.set(key, left);
          else inFlight.delete(key);
          extra.signal.removeEventListener('abort', abort);
          gone.removeEventListener('abort', abort);
        }
      });
      return server;
    },
  };
}

export type McpDoor = ReturnType<typeof createMcpDoor>;
