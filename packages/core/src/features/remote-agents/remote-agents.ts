import type { RunRecord } from '@rein/contract';
import { ConfigError, type RemoteAgents as Declared, type Tool } from '@rein/define/internal';
import { RemoteAgentClient } from '../../adapters/a2a/remote-agent-client.js';
import type { RedisClient } from '../../adapters/redis/redis.js';
import { RemoteTaskList } from '../../adapters/redis/remote-tasks.js';
import type { Logger } from '../../shared/logger.js';
import type { RunEndPlug } from '../run-end.js';
import { createRemoteAgentTool, type RemoteAgentToolDeps } from './remote-agent-tool.js';

export interface RemoteAgentsOptions {
  redis: RedisClient;
  /** REIN_REMOTE_AGENT_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  logger: Logger;
  /** Tests shorten the pause between two reads of a remote task. */
  pollDelayMs?: RemoteAgentToolDeps['pollDelayMs'];
}

/**
 * An app's remote A2A agents (`defineApp({remoteAgents})`): one SDK client and one tool
 * `call_<name>` each, the cards read at a worker's start, and the plug that cancels a run's
 * open remote tasks when the run ends first (cancelled, failed, timed out).
 */
export function createRemoteAgents(declared: Declared, opts: RemoteAgentsOptions) {
  const tasks = new RemoteTaskList(opts.redis);
  const clients = new Map(
    Object.entries(declared).map(([name, config]) => [name, new RemoteAgentClient(config, { allowPrivate: opts.allowPrivate })]),
  );
  const clientOf = (name: string) => clients.get(name) as RemoteAgentClient;
  const toolOf = new Map(
    Object.entries(declared).map(([name, config]) => [
      name,
      createRemoteAgentTool(name, config, {
        client: () => clientOf(name).client(),
        tasks,
        ...(opts.pollDelayMs ? { pollDelayMs: opts.pollDelayMs } : {}),
      }),
    ]),
  );

  return {
    tools: [...toolOf.values()],

    /**
     * Reads every card (a worker, before it takes work): the model then reads the agent's
     * own description and skills. A card that cannot be read fails the start, unless the
     * agent is `optional` (its calls then fail until the card can be read).
     */
    async start(registered: Map<string, Tool>): Promise<void> {
      await Promise.all(
        Object.entries(declared).map(async ([name, config]) => {
          const tool = toolOf.get(name) as Tool;
          try {
            const card = await clientOf(name).card();
            const skills = card.skills.map((s) => s.name || s.id).filter(Boolean);
            const about = [card.description, skills.length ? `Skills: ${skills.join(', ')}.` : ''].filter(Boolean).join(' ');
            if (!config.description && about)
              registered.set(tool.name, { ...tool, description: `${tool.description} ${about}`.slice(0, 2_000) });
          } catch (err) {
            if (!config.optional)
              throw new ConfigError(`remote agent "${name}": its card at ${config.url} cannot be read (${(err as Error).message})`);
            opts.logger.warn(
              { remoteAgent: name, err: (err as Error).message },
              'remote agent card not readable; its calls fail until it is',
            );
          }
        }),
      );
    },

    /**
     * Cancels what a finished run's calls still wait on, side by side (one slow agent does not
     * hold the others); a remote that cannot be reached is logged, not retried.
     */
    plug: {
      feature: 'remote-agents',
      async finished(run: RunRecord) {
        const open = await tasks.list(run.id);
        await Promise.all(
          [...open].map(async ([callKey, { agent, taskId }]) => {
            const client = clients.get(agent);
            try {
              if (client)
                await (await client.client()).cancelTask(
                  { tenant: '', id: taskId, metadata: undefined },
                  { signal: AbortSignal.timeout(10_000) },
                );
              opts.logger.info({ runId: run.id, remoteAgent: agent, taskId }, 'remote task cancelled with its run');
            } catch (err) {
              // Over already (a task that ended is not cancelable) or unreachable: nothing more Rein can do.
              opts.logger.warn(
                { runId: run.id, remoteAgent: agent, taskId, err: (err as Error).message },
                'remote task not cancelled with its run',
              );
            }
            await tasks.remove(run.id, callKey);
          }),
        );
      },
    } satisfies RunEndPlug,
  };
}

export type RemoteAgents = ReturnType<typeof createRemoteAgents>;
