import { setTimeout as delay } from 'node:timers/promises';
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  type ApprovalRequirement,
  callArgumentsSchema,
  type EffectHandle,
  type InputReply,
  type RemoteAgentConfig,
  remoteAgentTool,
  type Tool,
  type ToolContext,
  ToolError,
  ToolNeedsInputError,
  ToolOutcomeUnknownError,
} from '@rein/define/internal';
import { notCarriedOut, RemoteAgentAnswerTooLargeError } from '../../adapters/a2a/remote-agent-client.js';
import type { RemoteTaskList } from '../../adapters/redis/remote-tasks.js';
import { keepableTaskId, memoHandle, memoOf, messageText, type RemoteCallMemo, remoteOutcome } from '../../policy/a2a/remote-task.js';
import { hashArguments } from '../../policy/app/argument-hash.js';
import { MAX_INPUT_ROUNDS } from '../../policy/step/input-approvals.js';

/** How long a call waits on its remote task by default; past it, the remote task is cancelled. */
export const DEFAULT_REMOTE_TIMEOUT_MS = 5 * 60_000;
/** What the executor gives the call beyond its own deadline, so the call cancels the remote task itself. */
const GRACE_MS = 15_000;
const SUMMARY_MAX = 300;
/** The longest one read of a remote task may take. */
const READ_MS = 30_000;

export interface RemoteAgentToolDeps {
  /** The SDK client for this remote agent (its card read within the TTL). */
  client(): Promise<Client>;
  tasks: RemoteTaskList;
  /** Pause between two reads of the remote task's state (ms, for the attempt number). */
  pollDelayMs?: (attempt: number) => number;
  now?: () => number;
}

const defaultPollDelay = (attempt: number) => Math.min(2_000, 200 * 2 ** Math.min(attempt, 4));

/** What an agent answered about a task, if it is that task: an answer about another one is not taken for it. */
const sameTask = (task: Task, read: Task | undefined): Task => (read?.id === task.id ? read : task);

/** A JSON-RPC error the remote agent answered with: it refused the request, so nothing happened there. */
const answeredWithError = (err: unknown): err is Error & { envelopeCode: number } =>
  typeof (err as { envelopeCode?: unknown } | null)?.envelopeCode === 'number';
/** JSON-RPC's internal error: the agent may have acted before it failed. */
const INTERNAL_ERROR = -32603;

/** A pause that ends early, without a throw, when the call is cut off (the loop then settles the task). */
const sleep = (ms: number, signal: AbortSignal) => delay(ms, undefined, { signal }).catch(() => undefined);

/**
 * Sends once. A refusal (by the agent, its server or the address rules), or no link, is a
 * failure; a broken link after sending is an unknown outcome.
 */
async function send(name: string, client: Client, message: Message, signal: AbortSignal): Promise<Task | Message> {
  try {
    return await client.sendMessage(
      {
        tenant: '',
        message,
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
        metadata: undefined,
      },
      { signal },
    );
  } catch (err) {
    if (notCarriedOut(err)) {
      const { code, message, retryable } = err as ToolError;
      throw new ToolError(code, `the message to ${name} was not taken: ${message}`, { retryable });
    }
    if (answeredWithError(err) && err.envelopeCode !== INTERNAL_ERROR)
      throw new ToolError('remote_agent_refused', `${name} refused the message: ${err.message}`);
    throw new ToolOutcomeUnknownError(`the message to ${name} may have arrived, but no answer came back (${(err as Error).message})`, err);
  }
}

/** Asks the agent to cancel the task; the task as it answers (it may have ended otherwise meanwhile), or none. */
async function cancel(client: Client, taskId: string): Promise<Task | undefined> {
  return client.cancelTask({ tenant: '', id: taskId, metadata: undefined }, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
}

/** A remote agent as its calls see it: its name, rules and clock (what createRemoteAgentTool settles once). */
interface RemoteAgent {
  name: string;
  deps: RemoteAgentToolDeps;
  timeoutMs: number;
  pollDelay: (attempt: number) => number;
  now: () => number;
  approval: { risk: ApprovalRequirement['risk']; requiredRole: ApprovalRequirement['requiredRole'] } | null;
  origin: string;
  askPerson: boolean;
  /**
   * A request's signal: cut by the call's own deadline (and `most`), so the call settles the
   * remote task itself well before the executor cuts it, whatever the agent does with the link.
   */
  until(deadline: number, signal: AbortSignal, most?: number): AbortSignal;
}

/**
 * A remote A2A agent as the tool `call_<name>` `{input}`: a governed write. The message's
 * id is the call's idempotency key; the remote task's id is remembered in the effect
 * ledger before the call waits on it, so a worker that dies mid-call resumes by reading
 * the task's state and never sends the message again (without the id, the outcome is
 * uncertain). The task stays listed, to be cancelled when the run ends, until it is over.
 * With `onInputRequired: 'ask'`, the task's question parks the call on a person's answer
 * (ToolNeedsInputError), which the call sends into the same task when it runs again.
 */
export function createRemoteAgentTool(name: string, config: RemoteAgentConfig, deps: RemoteAgentToolDeps): Tool {
  const now = deps.now ?? Date.now;
  const timeoutMs = config.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS;
  const approval =
    config.approval === false
      ? null
      : { risk: config.approval?.risk ?? ('high' as const), requiredRole: config.approval?.requiredRole ?? 'approver' };
  const origin = new URL(config.url).origin;
  const askPerson = config.onInputRequired === 'ask';
  const agent: RemoteAgent = {
    name,
    deps,
    timeoutMs,
    pollDelay: deps.pollDelayMs ?? defaultPollDelay,
    now,
    approval,
    origin,
    askPerson,
    until: (deadline, signal, most = Number.POSITIVE_INFINITY) =>
      AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, Math.min(most, deadline - now())))]),
  };
  return {
    name: remoteAgentTool(name),
    description: config.description ?? `Ask the remote agent "${name}" and get its answer.`,
    kind: 'write',
    parameters: callArgumentsSchema,
    dependency: `a2a:${name}`,
    // Re-run after a crash only to resume: the remembered task is read, the message never sent again.
    honoursIdempotencyKey: true,
    timeoutMs: timeoutMs + GRACE_MS,
    // Another address or approval rule voids approvals granted under the old one.
    policyVersion: 1 + Number.parseInt(hashArguments({ url: config.url, approval, ...(askPerson ? { ask: true } : {}) }).slice(0, 7), 16),
    policySource: JSON.stringify({ remoteAgent: name, url: config.url, approval, onInputRequired: config.onInputRequired }),
    approval: (args) => {
      if (!approval) return null;
      const shown = summaryLine((args as { input: string }).input);
      return { ...approval, summary: `Ask the remote agent ${name}: ${shown}`, context: { 'remote agent': name, at: origin } };
    },
    execute: (args, ctx) => execute(agent, args, ctx),
  };
}

/**
 * Reads the task until it is over or asks for input; a read that fails is tried again
 * until the deadline. Then the task is cancelled, and the call ends as the agent's answer
 * to the cancel says: cancelled, or over otherwise meanwhile (its own outcome), or unknown.
 */
async function waitFor(
  agent: RemoteAgent,
  client: Client,
  task: Task,
  deadline: number,
  signal: AbortSignal,
  runId: string,
  callKey: string,
  asked: { rounds: number; stale?: Task['status'] },
): Promise<string> {
  const { name, deps, timeoutMs, pollDelay, now, askPerson, until } = agent;
  let stopped: string | undefined; // why the call stopped waiting and cancelled the task
  let unreadable: string | undefined; // a task too large to read: it will not get smaller, so waiting ends
  for (let attempt = 0; ; attempt++) {
    const outcome = remoteOutcome(name, task);
    // The question just answered, as the agent showed it before it took the answer in: not a new one.
    const answered = outcome.kind === 'needs_input' && asked.stale !== undefined && sameStatus(task.status, asked.stale);
    if (outcome.kind === 'needs_input' && !answered) {
      // Credentials never go through an approval; past the last round, the question ends the call.
      if (askPerson && !outcome.auth && asked.rounds < MAX_INPUT_ROUNDS)
        throw new ToolNeedsInputError(asked.rounds + 1, questionRequirement(agent, outcome.question), { input: '' });
      return outcome.text; // left listed: the run's end cancels what nobody will answer
    }
    if (outcome.kind === 'answer' || outcome.kind === 'failed') {
      await deps.tasks.remove(runId, callKey);
      if (stopped && task.status?.state === TaskState.TASK_STATE_CANCELED)
        throw new ToolError('remote_agent_timeout', `${name}: ${stopped}; its task ${task.id} was cancelled`);
      if (outcome.kind === 'failed') throw new ToolError('remote_agent_failed', outcome.text);
      return outcome.text;
    }
    if (stopped) throw new ToolOutcomeUnknownError(`${name}: ${stopped}, and its task ${task.id} could not be cancelled`);
    if (unreadable || now() >= deadline || signal.aborted) {
      stopped = unreadable ?? (signal.aborted ? 'the call was cut off' : `no answer within ${timeoutMs} ms`);
      task = sameTask(task, await cancel(client, task.id));
      continue;
    }
    await sleep(Math.min(pollDelay(attempt), Math.max(0, deadline - now())), signal);
    task = await client
      .getTask({ tenant: '', id: task.id, historyLength: 0 }, { signal: until(deadline, signal, READ_MS) })
      .then((read) => sameTask(task, read))
      .catch((err) => {
        if (err instanceof RemoteAgentAnswerTooLargeError) unreadable = err.message;
        return task;
      });
  }
}

/** One call: send the message (or, resuming, read the task it started, and send a person's answer), then wait on the task. */
async function execute(agent: RemoteAgent, args: unknown, ctx: ToolContext): Promise<string> {
  const { name, deps, timeoutMs, now, until } = agent;
  const { input } = callArgumentsSchema.parse(args);
  const effect = ctx.effect;
  if (!effect) throw new Error(`${remoteAgentTool(name)} runs only as a journaled write`);
  const deadline = now() + timeoutMs;
  if (effect.resumed && !effect.remembered)
    throw new ToolOutcomeUnknownError(`a worker stopped while it sent the message to ${name}, before its task was known`);
  // Resuming, the message went already: an agent that cannot be reached now leaves its outcome unknown, not failed.
  const client = await deps.client().catch((err: Error) => {
    if (!effect.remembered) throw err;
    throw new ToolOutcomeUnknownError(`${name}, whose task started before a worker stopped, cannot be reached (${err.message})`, err);
  });
  const asked: { rounds: number; stale?: Task['status'] } = { rounds: effect.reply?.round ?? 0 };
  let task: Task;
  if (effect.remembered) {
    const memo = memoOf(effect.remembered);
    const id = memo.task;
    task = await client
      .getTask({ tenant: '', id, historyLength: 0 }, { signal: until(deadline, ctx.signal, READ_MS) })
      .then((read) => {
        if (read.id !== id) throw new Error('the agent answered about another task');
        return read;
      })
      .catch((err: Error) => {
        throw new ToolOutcomeUnknownError(`${name}'s task ${id}, started before a worker stopped, cannot be read (${err.message})`, err);
      });
    if (effect.reply) {
      const answered = await answer(agent, client, task, memo, effect.reply, effect, ctx, deadline);
      task = answered.task;
      if (answered.stale) asked.stale = answered.stale;
    }
  } else {
    const message = textMessage(ctx.idempotencyKey, input);
    if (now() >= deadline) throw new ToolError('remote_agent_timeout', `${name}: no time was left to send the message`);
    const sent = await send(name, client, message, until(deadline, ctx.signal));
    if (!('status' in sent)) return messageText(sent) || `(${name} answered with an empty message)`;
    task = sent;
    if (!keepableTaskId(task.id))
      throw new ToolOutcomeUnknownError(
        `${name} started a task, but its task id cannot be kept (${task.id.length} characters, or control characters)`,
      );
    await deps.tasks.add(ctx.runId, ctx.idempotencyKey, { agent: name, taskId: task.id });
    if (!(await effect.remember(task.id))) await finishedMeanwhile(agent, client, task, ctx);
  }
  return waitFor(agent, client, task, deadline, ctx.signal, ctx.runId, ctx.idempotencyKey, asked);
}

/** The run ended while the call worked (its end may have listed its tasks before this one was): cancelled here, unlisted once over. */
async function finishedMeanwhile(agent: RemoteAgent, client: Client, task: Task, ctx: ToolContext): Promise<never> {
  const { name, deps } = agent;
  const after = remoteOutcome(name, sameTask(task, await cancel(client, task.id))).kind;
  if (after === 'pending' || after === 'needs_input')
    throw new ToolOutcomeUnknownError(`the run finished while ${name} worked, and its task ${task.id} could not be cancelled`);
  await deps.tasks.remove(ctx.runId, ctx.idempotencyKey);
  throw new ToolError('remote_agent_cancelled', `the run finished while ${name} worked; its task ${task.id} was cancelled`);
}

/**
 * A person's reply to the task's question: the answer goes into the same task once (its
 * message id the call's key and the approval's; the ledger says it is being sent, then
 * sent), and the call waits on the task again. No answer cancels the task. `stale`: the
 * status the answer was sent to, which is no new question while the agent still shows it.
 */
async function answer(
  agent: RemoteAgent,
  client: Client,
  task: Task,
  memo: RemoteCallMemo,
  reply: InputReply,
  effect: EffectHandle,
  ctx: ToolContext,
  deadline: number,
): Promise<{ task: Task; stale?: Task['status'] }> {
  const { name, deps, now, until } = agent;
  if (memo.sent === reply.approvalId) return { task }; // sent before a worker stopped
  if (memo.sending === reply.approvalId)
    throw new ToolOutcomeUnknownError(`a worker stopped while it sent the answer to ${name}'s question, before it knew it arrived`);
  // The task went on without the answer (cancelled, expired there): its outcome is the call's.
  if (remoteOutcome(name, task).kind !== 'needs_input') return { task };
  if (!reply.answered) {
    const after = sameTask(task, await cancel(client, task.id));
    const over = !['pending', 'needs_input'].includes(remoteOutcome(name, after).kind);
    if (over) await deps.tasks.remove(ctx.runId, ctx.idempotencyKey);
    throw new ToolError(
      'remote_agent_unanswered',
      `${name}'s question was not answered (${reply.why}); its task ${task.id} ${over ? 'was cancelled' : 'could not be cancelled'}`,
    );
  }
  const { input } = callArgumentsSchema.parse(reply.args);
  const message = { ...textMessage(`${ctx.idempotencyKey}:${reply.approvalId}`, input), taskId: task.id, contextId: task.contextId };
  if (now() >= deadline) throw new ToolError('remote_agent_timeout', `${name}: no time was left to send the answer`);
  if (!(await effect.remember(memoHandle({ task: task.id, sending: reply.approvalId }))))
    return finishedMeanwhile(agent, client, task, ctx);
  const sent = await send(name, client, message, until(deadline, ctx.signal));
  if (!(await effect.remember(memoHandle({ task: task.id, sent: reply.approvalId })))) return finishedMeanwhile(agent, client, task, ctx);
  return { task: 'status' in sent ? sameTask(task, sent) : task, stale: task.status };
}

/** The requirement of the approval a question parks the run on: the call's own approval rule (an approver, by default). */
function questionRequirement(agent: RemoteAgent, question: string): ApprovalRequirement {
  const { name, approval, origin } = agent;
  const shown = summaryLine(question);
  return {
    risk: approval?.risk ?? 'high',
    requiredRole: approval?.requiredRole ?? 'approver',
    summary: `The remote agent ${name} asks: ${shown || '(no question given)'}`,
    context: { 'remote agent': name, at: origin },
  };
}

/**
 * Text for a summary a person reads, bounded, on one line: control and bidi characters folded
 * to a space, so an agent's text cannot add lines of its own to the lists that show summaries
 * one a line (the A2A task's status, the MCP door's answer) nor reorder what is shown around it.
 */
function summaryLine(text: string): string {
  const line = text.replace(/[\p{Cc}\u202a-\u202e\u2066-\u2069]+/gu, ' ');
  return line.length > SUMMARY_MAX ? `${line.slice(0, SUMMARY_MAX)}…` : line;
}

/** A text message from Rein (the user's side of the task). */
const textMessage = (messageId: string, text: string): Message => ({
  messageId,
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** The same status as seen before: the same state, said at the same time in the same words. */
const sameStatus = (a: Task['status'], b: Task['status']) =>
  a?.state === b?.state &&
  a?.timestamp === b?.timestamp &&
  a?.message?.messageId === b?.message?.messageId &&
  messageText(a?.message) === messageText(b?.message);
