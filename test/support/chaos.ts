import type { ChildProcess } from 'node:child_process';
import type { RedisClient } from '@rein/core';
import { HOUSEKEEPING_QUEUE, queuePrefix, runKeys, stepQueue } from '@rein/core/internal';
import { Queue } from 'bullmq';
import { type Fleet, KEYS } from './fleet.js';

/** What the chaos scenarios share: disrupting a fleet, and checking afterwards that nothing was lost or done twice. */

export const TERMINAL = ['succeeded', 'failed', 'cancelled'];
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retries a call while the fleet is being disrupted (Redis down answers 503). */
export async function persist<T>(fn: () => Promise<T>, until = Date.now() + 60_000): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(200);
    }
  }
}

const alive = (p: ChildProcess) => p.exitCode === null && p.signalCode === null;

/**
 * SIGKILLs a random live worker every ~1.2 s for `forMs`, each time starting its
 * replacement with `restart` (default: a worker like the fleet's), given the victim.
 */
export async function killRandomWorkers(
  fleet: Fleet,
  forMs: number,
  restart: (victim: ChildProcess) => Promise<unknown> = () => fleet.startWorker(),
): Promise<void> {
  const end = Date.now() + forMs;
  while (Date.now() < end) {
    await sleep(1200);
    const live = fleet.workers.filter(alive);
    const victim = live[Math.floor(Math.random() * live.length)];
    if (!victim) continue;
    victim.kill('SIGKILL');
    await restart(victim);
  }
}

/** Approves every pending approval the approver sees, every 300 ms, until `stop()` is called (it resolves once the loop ended). */
export function keepApproving(fleet: Fleet): { stop(): Promise<void> } {
  let approving = true;
  const loop = (async () => {
    while (approving) {
      const pending = await fleet.callApprover('GET', '/v1/approvals?status=pending', KEYS.approver.key).catch(() => null);
      for (const a of pending?.body?.approvals ?? [])
        await fleet.callApprover('POST', `/v1/approvals/${a.id}/approve`, KEYS.approver.key, {}).catch(() => {});
      await sleep(300);
    }
  })();
  return {
    async stop() {
      approving = false;
      await loop;
    },
  };
}

/** Polls the runs until each is terminal (or the bound passes); the finished ones by id. */
export async function finalRuns<T extends { status: string }>(fleet: Fleet, ids: readonly string[], timeoutMs = 90_000) {
  const done = new Map<string, T>();
  const until = Date.now() + timeoutMs;
  while (done.size < ids.length && Date.now() < until) {
    for (const id of ids.filter((x) => !done.has(x))) {
      const { status, body } = await fleet.callApi('GET', `/v1/runs/${id}`).catch(() => ({ status: 0, body: null }));
      if (status === 200 && TERMINAL.includes(body.status)) done.set(id, body);
    }
    await sleep(250);
  }
  return done;
}

/** The tokens of a run's journaled decisions: what its usage must equal if each decision was paid and counted once. */
export async function journaledTokens(client: RedisClient, runId: string): Promise<number> {
  const decisions = Object.values(await client.hgetall(runKeys(runId).decisions)).map((d) => JSON.parse(d));
  return decisions.reduce((sum, d) => sum + d.usage.promptTokens + d.usage.completionTokens, 0);
}

/**
 * Jobs still waiting, active, delayed or prioritised once every run has finished, after a
 * bounded wait: a job whose worker was killed (active, its lock lapsed) is still being taken
 * up again when the last run ends, and then finds its run finished. Looks at every step-queue
 * shard of each version in `versions` and at the housekeeping queues (expiry timers), leaving
 * out the housekeeping schedulers' own passes.
 */
export async function stuckJobs(client: RedisClient, shards: number, versions: readonly string[], settleMs = 30_000) {
  const leftover = async () => {
    const left = [];
    for (let shard = 0; shard < shards; shard++) {
      const queues = [
        ...versions.map((version) => stepQueue(client, shard, version)),
        new Queue(HOUSEKEEPING_QUEUE, { connection: client, prefix: queuePrefix(shard) }),
      ];
      for (const queue of queues) {
        left.push(
          ...(await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized'])).filter((j) => j && !['sweep', 'reap'].includes(j.name)),
        );
        await queue.close();
      }
    }
    return left;
  };
  let left = await leftover();
  for (const settleBy = Date.now() + settleMs; left.length > 0 && Date.now() < settleBy; left = await leftover()) await sleep(500);
  return left;
}

/** The app versions the fleet knows (GET /v1/versions): the step queues their runs' jobs use. */
export async function fleetVersions(fleet: Fleet): Promise<string[]> {
  const { body } = await persist(() => fleet.callApi('GET', '/v1/versions', KEYS.operator.key));
  return (body.versions as Array<{ version: string }>).map((v) => v.version);
}
