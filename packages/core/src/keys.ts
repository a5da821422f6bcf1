/**
 * The Redis keyspace. Every key of one run shares the hash tag `{runId}` so that the
 * per-run Lua scripts are single-slot on Redis Cluster; tenant indexes share `{tenantId}`.
 */
export const runKeys = (runId: string) => {
  const p = `rein:{${runId}}`;
  return {
    run: `${p}:run`,
    messages: `${p}:messages`,
    steps: `${p}:steps`,
    approvals: `${p}:approvals`,
    events: `${p}:events`,
    decisions: `${p}:decisions`,
    effects: `${p}:effects`,
    snapshots: `${p}:snapshots`,
  };
};
export type RunKeys = ReturnType<typeof runKeys>;

export const tenantKeys = (tenantId: string) => {
  const p = `rein:tenant:{${tenantId}}`;
  return {
    runs: `${p}:runs`,
    approvals: `${p}:approvals`,
    approvalFeed: `${p}:approval-feed`,
    active: `${p}:active`,
    usage: (day: string) => `${p}:usage:${day}`,
    idempotency: (key: string) => `${p}:idem:${key}`,
  };
};

/** Non-terminal, non-parked runs by deadline (ms): what the deadline sweeper scans. */
export const DEADLINES_KEY = 'rein:deadlines';

/** Every non-terminal run by last change (ms): what the reaper scans. */
export const ACTIVE_RUNS_KEY = 'rein:active-runs';

/** BullMQ prefix with a hash tag, so each queue's keys live in one cluster slot. */
export const QUEUE_PREFIX = '{rein}';

/**
 * The prefix of step-queue shard `shard`: shard 0 keeps `{rein}` (a single-shard
 * deployment's queue, unchanged), shard n is `{rein-n}`, a hash tag of its own.
 */
export const queuePrefix = (shard: number) => (shard === 0 ? QUEUE_PREFIX : `{rein-${shard}}`);
