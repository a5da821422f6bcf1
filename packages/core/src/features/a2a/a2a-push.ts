import { createHash } from 'node:crypto';
import { StreamResponse } from '@a2a-js/sdk';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import type { RunRecord } from '@rein/contract';
import { Webhook as Signer } from 'standardwebhooks';
import type { RunStore } from '../../adapters/redis/run-store.js';
import { A2A_TERMINAL, type A2aTask, a2aTask } from '../../policy/a2a/a2a-task.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { RunEndPlug } from '../run-end.js';
import { runView } from '../runs/run-service.js';
import type { DeliveryTarget } from '../webhooks/webhook-delivery.js';
import type { PushJob, WebhookDispatcher } from '../webhooks/webhook-dispatcher.js';
import { type PushConfigStore, pushConfigField, type StoredPushConfig } from './push-config-store.js';

/** The content type of A2A 1.0 push notifications (a `StreamResponse` as JSON). */
export const A2A_PUSH_CONTENT_TYPE = 'application/a2a+json';

/** A notification as its config's protocol shapes it: 1.0's `StreamResponse`, or (the SDK's translation) v0.3's bare task. */
function pushBody(config: StoredPushConfig, data: PushJob['data']): { body: string; contentType: string } {
  if (config.protocolVersion !== '0.3') return { body: JSON.stringify(data), contentType: A2A_PUSH_CONTENT_TYPE };
  return new V03PushNotificationSerializer().serialize(StreamResponse.fromJSON(data));
}

export interface A2aPushDeps {
  configs: PushConfigStore;
  store: Pick<RunStore, 'get' | 'approvals'>;
  /** The webhook queue: push notifications are delivered, retried and guarded as webhooks are. */
  dispatcher: Pick<WebhookDispatcher, 'push'>;
  logger: Logger;
  metrics: Metrics;
}

/**
 * A notification's key: its config (as last set: a config replaced by a new URL or token is
 * told again), task and state, and when the task entered that state (a terminal state is
 * entered once, so it is keyed without): the same notification enqueued twice is delivered
 * once, and its `webhook-id` lets a receiver see a repeat.
 */
function keyOf(config: StoredPushConfig, task: A2aTask): string {
  const entered = A2A_TERMINAL.includes(task.status.state) ? '' : task.status.timestamp;
  return createHash('sha256')
    .update([config.userId, config.id, config.createdAt, task.id, task.status.state, entered].join('\n'))
    .digest('hex')
    .slice(0, 32);
}

/**
 * A2A push notifications: at each change of a task's state, the task (as `GetTask` shows
 * it) is POSTed to each of its configs through the webhook queue — signed, retried with
 * backoff, and refused for private addresses as webhooks are.
 */
export function createA2aPush(deps: A2aPushDeps) {
  async function send(config: StoredPushConfig, task: A2aTask): Promise<void> {
    const key = keyOf(config, task);
    const job: PushJob = {
      kind: 'a2a-push',
      tenantId: config.tenantId,
      taskId: task.id,
      config: pushConfigField(config.userId, config.id),
      messageId: `msg_${key}`,
      data: { task },
    };
    await deps.dispatcher.push(job, key);
  }

  /**
   * A commit moved the run (its status, or its approvals): its configs are told the task's
   * state unless it is the state they were told last. It reads the run as it is now, not as
   * the commit left it, since two commits' hooks may run out of order. A terminal state is
   * pushed whenever asked (its key makes a second push a no-op), so a finish hook the reaper
   * runs again still delivers it.
   */
  async function changed(run: RunRecord): Promise<void> {
    const configs = await deps.configs.all(run.id);
    if (configs.length === 0) return;
    const current = (await deps.store.get(run.id)) ?? run;
    const approvals = current.pendingApprovals.length ? await deps.store.approvals(run.id) : [];
    const task = a2aTask(runView(current, approvals));
    const before = await deps.configs.swapState(run.id, task.status.state);
    if (before === task.status.state && !A2A_TERMINAL.includes(task.status.state)) return;
    for (const config of configs) await send(config, task);
  }

  return {
    changed,

    /** A config was just set: it is told the task's state at once (what it would otherwise wait for the next change to learn). */
    registered: send,

    /** The target of a push job, resolved when it is sent: a config deleted since drops it. */
    async target(job: PushJob): Promise<DeliveryTarget | null> {
      const config = await deps.configs.byField(job.taskId, job.config);
      if (!config || config.tenantId !== job.tenantId) return null;
      const { scheme, credentials } = config.authentication ?? {};
      const { body, contentType } = pushBody(config, job.data);
      return {
        url: config.url,
        body,
        // Keyed by the token the receiver chose (or was given): it can check the body and its time with what it holds.
        signer: new Signer(config.token, { format: 'raw' }),
        headers: {
          'content-type': contentType,
          'x-a2a-notification-token': config.token,
          ...(scheme && credentials ? { authorization: `${scheme} ${credentials}` } : {}),
        },
        logged: { taskId: job.taskId, pushConfigId: config.id },
      };
    },

    /** Its plug: a finished task's push failing to enqueue leaves the run to the reaper; a change's is logged. */
    plug(): RunEndPlug {
      return {
        feature: 'a2a-push',
        finished: changed,
        changed: (run) =>
          changed(run).catch((err: Error) => {
            deps.metrics.webhookDeliveries.inc({ outcome: 'not_enqueued' });
            deps.logger.error({ runId: run.id, err: err.message }, 'could not enqueue A2A push notifications');
          }),
      };
    },
  };
}

export type A2aPush = ReturnType<typeof createA2aPush>;
