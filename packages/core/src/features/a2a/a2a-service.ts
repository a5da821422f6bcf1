import { createHash, randomBytes } from 'node:crypto';
import { type Principal, type RunView, submitRunBodySchema } from '@rein/contract';
import type { AgentProfile } from '@rein/define/internal';
import { assertPublicUrl } from '../../adapters/net/address-guard.js';
import { A2A_TERMINAL, type A2aTask, a2aContextId, a2aSettled, a2aState, a2aTask } from '../../policy/a2a/a2a-task.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { RunService } from '../runs/run-service.js';
import type { WatchRun } from '../runs/watch-run.js';
import type { A2aPush } from './a2a-push.js';
import { a2aDecisionSchema, type PushConfigParams, type SendMessageParams } from './a2a-schemas.js';
import { type PushConfigStore, pushConfigField, type StoredPushConfig } from './push-config-store.js';

/** The A2A version a call came in by: a push config set over v0.3 is told in v0.3's shape. */
export type A2aVersion = '1.0' | '0.3';

/** Push-notification configs one task may hold (all callers together): bounds each change's fan-out. */
export const MAX_PUSH_CONFIGS_PER_TASK = 10;

/** A config as shown back to the caller who set it: the credentials it gave stay with Rein. */
export interface PushConfigView {
  id: string;
  taskId: string;
  url: string;
  token: string;
  authentication?: { scheme: string };
}

const pushConfigView = (c: StoredPushConfig): PushConfigView => ({
  id: c.id,
  taskId: c.taskId,
  url: c.url,
  token: c.token,
  ...(c.authentication ? { authentication: { scheme: c.authentication.scheme } } : {}),
});

/** One frame of a task's stream, as A2A's `StreamResponse` names its cases; `null`: nothing new for a while. */
export type A2aStreamFrame =
  | { task: A2aTask }
  | { statusUpdate: { taskId: string; contextId: string; status: A2aTask['status'] } }
  | { artifactUpdate: { taskId: string; contextId: string; artifact: A2aTask['artifacts'][number]; append: false; lastChunk: true } }
  | null;

export interface A2aServiceDeps {
  runs: Pick<RunService, 'submit' | 'get' | 'cancel'>;
  approvals: Pick<ApprovalService, 'get' | 'decide'>;
  agents: readonly AgentProfile[];
  /** The app version this process serves: the card's `version`. */
  version: string;
  /** Push notifications: the configs, their first push, and REIN_WEBHOOK_ALLOW_PRIVATE (the webhooks' address rule). */
  push: { configs: PushConfigStore; notify: Pick<A2aPush, 'registered'>; allowPrivate: boolean; now?: () => number };
}

/** The Agent Card's security scheme: the same bearer keys as the API. */
const BEARER = {
  bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'a Rein API key (or an OIDC token where sign-in is on)' } },
};

/** The run behind a task of this agent; another agent's run, like another tenant's, is not found. */
async function taskRun(deps: A2aServiceDeps, principal: Principal, agent: string, id: string): Promise<RunView> {
  const run = await deps.runs.get(principal, id);
  if (run.agent !== agent) throw new NotFoundError(`task ${id}`);
  return run;
}

/**
 * Stores the caller's config on a task it can read and tells it the task's state at once.
 * Without an id, the URL names it: the same request again replaces it rather than adding one.
 * Without a token, Rein makes one (the receiver reads it back with Get or List).
 * Its URL was checked before (`checkPushUrl`).
 */
async function setPushConfig(
  deps: A2aServiceDeps,
  principal: Principal,
  run: RunView,
  params: PushConfigParams,
  version: A2aVersion,
): Promise<PushConfigView> {
  if (params.taskId && params.taskId !== run.id) throw new InvalidRequestError(`the config names task ${params.taskId}, not ${run.id}`);
  const id = params.id ?? `pc_${createHash('sha256').update(params.url).digest('hex').slice(0, 24)}`;
  // No token given: the one Rein gave this config before, if it holds one, so a retry changes nothing.
  const held = params.token ? null : await deps.push.configs.byField(run.id, pushConfigField(principal.userId, id));
  const config: StoredPushConfig = {
    schemaVersion: 1,
    id,
    taskId: run.id,
    tenantId: principal.tenantId,
    userId: principal.userId,
    url: params.url,
    token: params.token ?? held?.token ?? randomBytes(24).toString('base64url'),
    ...(params.authentication ? { authentication: params.authentication } : {}),
    ...(version === '0.3' ? { protocolVersion: version } : {}),
    createdAt: new Date((deps.push.now ?? Date.now)()).toISOString(),
  };
  if (!(await deps.push.configs.put(config, MAX_PUSH_CONFIGS_PER_TASK)))
    throw new ConflictError('too_many_push_configs', `a task holds at most ${MAX_PUSH_CONFIGS_PER_TASK} push-notification configs`);
  // The task as it is once the config is stored: a change committed since `run` was read found no config to tell.
  await deps.push.notify.registered(config, a2aTask(await deps.runs.get(principal, run.id)));
  return pushConfigView(config);
}

/** A push URL Rein may call (the webhooks' SSRF rule), checked before anything is started or decided. */
async function checkPushUrl(deps: A2aServiceDeps, params: PushConfigParams | undefined): Promise<void> {
  if (params && !deps.push.allowPrivate) await assertPublicUrl(params.url, 'webhook_url');
}

/** The caller's own config of a task it can read; anyone else's, like a missing one, is not found. */
async function ownPushConfig(
  deps: A2aServiceDeps,
  principal: Principal,
  agent: string,
  taskId: string,
  id: string,
): Promise<StoredPushConfig> {
  await taskRun(deps, principal, agent, taskId);
  const config = await deps.push.configs.byField(taskId, pushConfigField(principal.userId, id));
  if (!config || config.tenantId !== principal.tenantId) throw new NotFoundError(`push config ${id} of task ${taskId}`);
  return config;
}

/** A task's push-notification configs (A2A `…TaskPushNotificationConfig`): the caller's own, on tasks it can read. */
function a2aPushConfigs(deps: A2aServiceDeps) {
  return {
    /** `CreateTaskPushNotificationConfig`: the caller's config of a task it can read (the same id again replaces it). */
    async createPushConfig(
      principal: Principal,
      agent: string,
      params: PushConfigParams,
      version: A2aVersion = '1.0',
    ): Promise<PushConfigView> {
      if (!params.taskId) throw new InvalidRequestError('taskId: the task to notify about is required');
      const run = await taskRun(deps, principal, agent, params.taskId);
      await checkPushUrl(deps, params);
      return setPushConfig(deps, principal, run, params, version);
    },

    async getPushConfig(principal: Principal, agent: string, taskId: string, id: string): Promise<PushConfigView> {
      return pushConfigView(await ownPushConfig(deps, principal, agent, taskId, id));
    },

    /** The caller's configs of the task (one page: a task holds at most MAX_PUSH_CONFIGS_PER_TASK). */
    async listPushConfigs(principal: Principal, agent: string, taskId: string) {
      await taskRun(deps, principal, agent, taskId);
      const mine = (await deps.push.configs.all(taskId)).filter((c) => c.userId === principal.userId && c.tenantId === principal.tenantId);
      return { configs: mine.map(pushConfigView), nextPageToken: '' };
    },

    /** Deletes the caller's config: deliveries still queued for it are dropped. */
    async deletePushConfig(principal: Principal, agent: string, taskId: string, id: string): Promise<void> {
      await ownPushConfig(deps, principal, agent, taskId, id);
      await deps.push.configs.remove(taskId, principal.userId, id);
    },
  };
}

/**
 * A2A 1.0 over the run and approval services: a task is a run, its context the session,
 * an answer to `input-required` an approval decision. It adds no rule of its own, so a
 * caller meets the same keys, tenants, quotas, budgets and approval rights as on `/v1`.
 */
export function createA2aService(deps: A2aServiceDeps) {
  const profiles = new Map(deps.agents.map((a) => [a.name, a]));

  const agentOf = (name: string): AgentProfile => {
    const profile = profiles.get(name);
    if (!profile) throw new NotFoundError(`agent ${name}`);
    return profile;
  };

  /** Decides the approvals a message's data parts answer: each with the caller's own rights (403 otherwise, and it waits). */
  async function answer(principal: Principal, run: RunView, parts: SendMessageParams['message']['parts']): Promise<void> {
    const decisions = parts.flatMap((p) => (p.data === undefined ? [] : [p.data]));
    if (a2aState(run) !== 'TASK_STATE_INPUT_REQUIRED')
      throw new ConflictError('task_not_awaiting_input', `task ${run.id} is ${run.status}: it takes no message now`);
    if (decisions.length === 0)
      throw new InvalidRequestError(
        `task ${run.id} waits for approvals: answer with a data part {approvalId, decision: "approve"|"reject", reason?, arguments?}`,
      );
    for (const raw of decisions) {
      const parsed = a2aDecisionSchema.safeParse(raw);
      if (!parsed.success) throw new InvalidRequestError(`a decision part: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
      const d = parsed.data;
      const approval = await deps.approvals.get(principal, d.approvalId);
      if (approval.runId !== run.id && approval.rootRunId !== run.id) throw new NotFoundError(`approval ${d.approvalId} of task ${run.id}`);
      await deps.approvals.decide(
        principal,
        d.approvalId,
        d.decision === 'approve'
          ? { kind: 'approve', ...(d.reason ? { comment: d.reason } : {}), ...(d.arguments ? { arguments: d.arguments } : {}) }
          : { kind: 'reject', reason: d.reason ?? 'rejected by the A2A caller' },
      );
    }
  }

  /** Follows a run until its task settles (terminal or `input-required`) or `signal` aborts; the task as it then is. */
  async function settle(principal: Principal, agent: string, run: RunView, watch: WatchRun, signal: AbortSignal): Promise<RunView> {
    let current = run;
    if (a2aSettled(a2aState(current))) return current;
    for await (const _ of watch(principal, run.id, signal)) {
      current = await taskRun(deps, principal, agent, run.id);
      if (a2aSettled(a2aState(current))) break;
    }
    return current;
  }

  return {
    /** The Agent Card of one agent (A2A 1.0's shape), its JSON-RPC interface at `endpoint`. */
    card(agent: string, endpoint: string) {
      const profile = agentOf(agent);
      const description = profile.description ?? `Rein agent ${profile.name}`;
      return {
        name: profile.name,
        description,
        version: deps.version,
        // One endpoint, both versions: it tells them apart by method name (v0.3's `message/send`, 1.0's `SendMessage`).
        supportedInterfaces: ['1.0', '0.3'].map((protocolVersion) => ({ url: endpoint, protocolBinding: 'JSONRPC', protocolVersion })),
        capabilities: { streaming: true, pushNotifications: true, extensions: [] },
        securitySchemes: BEARER,
        securityRequirements: [{ schemes: { bearer: { list: [] } } }],
        defaultInputModes: ['text/plain', 'application/json'],
        defaultOutputModes: profile.output ? ['text/plain', 'application/json'] : ['text/plain'],
        skills: [{ id: profile.name, name: profile.name, description, tags: ['rein', ...profile.tools], examples: [] }],
      };
    },

    /**
     * `SendMessage`: a message naming a task answers that task's approvals; any other
     * starts a run in its context (the session). The messageId is the run's idempotency
     * key, so a retried message is the same task, never a second run. Answers when the task
     * settles, or at once with `returnImmediately`.
     */
    async send(
      principal: Principal,
      agent: string,
      params: SendMessageParams,
      watch: WatchRun,
      signal: AbortSignal,
      version: A2aVersion = '1.0',
    ): Promise<A2aTask> {
      const profile = agentOf(agent);
      const { message } = params;
      const pushConfig = params.configuration?.taskPushNotificationConfig;
      await checkPushUrl(deps, pushConfig);
      let run: RunView;
      if (message.taskId) {
        run = await taskRun(deps, principal, agent, message.taskId);
        if (message.contextId && message.contextId !== a2aContextId(run))
          throw new InvalidRequestError(`task ${run.id} belongs to context ${a2aContextId(run)}, not ${message.contextId}`);
        if (A2A_TERMINAL.includes(a2aState(run))) throw new ConflictError('run_finished', `task ${run.id} already ${run.status}`);
        // Stored once the message's answer is taken: a refused one leaves nothing behind.
        await answer(principal, run, message.parts);
        if (pushConfig) await setPushConfig(deps, principal, run, pushConfig, version);
        run = await taskRun(deps, principal, agent, run.id);
      } else {
        if (message.parts.some((p) => p.url !== undefined || p.raw !== undefined))
          throw new InvalidRequestError('this agent takes text (and data) parts, not files', 'unsupported_part');
        const input = message.parts
          .flatMap((p) => (p.text !== undefined ? [p.text] : p.data !== undefined ? [JSON.stringify(p.data)] : []))
          .join('\n');
        // No context given: one derived from the message, so a retry lands in the same session with the same body.
        const sessionId = message.contextId ?? createHash('sha256').update(message.messageId).digest('hex').slice(0, 32);
        const body = submitRunBodySchema.safeParse({ agent: profile.name, input, sessionId });
        if (!body.success)
          throw new InvalidRequestError(`message: ${body.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
        if (pushConfig?.taskId)
          throw new InvalidRequestError('a push config sent with a new message names no task: the task is the one it starts');
        ({ run } = await deps.runs.submit(principal, body.data, `a2a:${message.messageId}`));
        if (pushConfig) await setPushConfig(deps, principal, run, pushConfig, version);
      }
      if (!params.configuration?.returnImmediately) run = await settle(principal, agent, run, watch, signal);
      return a2aTask(run);
    },

    ...a2aPushConfigs(deps),

    async get(principal: Principal, agent: string, id: string): Promise<A2aTask> {
      return a2aTask(await taskRun(deps, principal, agent, id));
    },

    /** `CancelTask`: the run is cancelled as by `POST /v1/runs/:id/cancel` (its approvals withdrawn). */
    async cancel(principal: Principal, agent: string, id: string): Promise<A2aTask> {
      await taskRun(deps, principal, agent, id);
      return a2aTask(await deps.runs.cancel(principal, id));
    },

    /**
     * A task's stream: the task first, then a status update at each change of state (the
     * answer as an artifact before `completed`), ending when the task settles.
     */
    async *updates(principal: Principal, agent: string, id: string, watch: WatchRun, signal: AbortSignal): AsyncGenerator<A2aStreamFrame> {
      let task = a2aTask(await taskRun(deps, principal, agent, id));
      yield { task };
      if (a2aSettled(task.status.state)) return;
      for await (const batch of watch(principal, id, signal)) {
        if (batch.length === 0) {
          yield null;
          continue;
        }
        const next = a2aTask(await taskRun(deps, principal, agent, id));
        if (next.status.state === task.status.state) continue;
        task = next;
        const ids = { taskId: task.id, contextId: task.contextId };
        for (const artifact of task.artifacts) yield { artifactUpdate: { ...ids, artifact, append: false, lastChunk: true } };
        yield { statusUpdate: { ...ids, status: task.status } };
        if (a2aSettled(task.status.state)) return;
      }
    },
  };
}

export type A2aService = ReturnType<typeof createA2aService>;
