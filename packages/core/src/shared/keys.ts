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
    /** Content-addressed texts the snapshots refer to (system prompts, tool lists). */
    blobs: `${p}:blobs`,
    /** The run's saga compensation (engine/compensation.ts): its plan and each undo's state. */
    compensation: `${p}:compensation`,
    /** Sub-agent runs it started: child id → `{agent, step, toolCallId}` (written before the child exists). */
    children: `${p}:children`,
    /** What its descendants spent: descendant id → that run's usage and cost (each the run's total: writes are idempotent). */
    tree: `${p}:tree`,
    /** A2A push-notification configs of its task: `<userId>:<configId>` → config JSON (features/a2a/push-config-store.ts). */
    a2aPush: `${p}:a2a-push`,
    /** The A2A task state last pushed to those configs: a commit that leaves it as it was pushes nothing. */
    a2aPushState: `${p}:a2a-push-state`,
    /** Remote A2A tasks its calls wait on: call key → `{agent, taskId}` (features/remote-agents: cancelled with the run). */
    remoteTasks: `${p}:remote-tasks`,
  };
};
export type RunKeys = ReturnType<typeof runKeys>;

export const tenantKeys = (tenantId: string) => {
  const p = `rein:tenant:{${tenantId}}`;
  return {
    runs: `${p}:runs`,
    approvals: `${p}:approvals`,
    approvalFeed: `${p}:approval-feed`,
    /** Runs queued or running (parked ones move to `parked` while they wait for a person). */
    active: `${p}:active`,
    parked: `${p}:parked`,
    /** Fair share (`queueBeyondLimit`): runs over the concurrency limit, oldest first, waiting for a slot. */
    waiting: `${p}:waiting`,
    usage: (day: string) => `${p}:usage:${day}`,
    /** Per day: run id → the usage (`tokens:costMicros`) already added to that day's usage, for idempotent charges. */
    charged: (day: string) => `${p}:charged:${day}`,
    /** Per user: the user id is escaped so that no user id and key pair can spell another's. */
    idempotency: (userId: string, key: string) => `${p}:idempotency:${encodeURIComponent(userId)}:${key}`,
    /** Run ids by creation time (ms), one index per filter value: what `GET /v1/runs` pages through. */
    runsByStatus: (status: string) => `${p}:runs:status:${status}`,
    runsByAgent: (agent: string) => `${p}:runs:agent:${agent}`,
    runsByUser: (userId: string) => `${p}:runs:user:${encodeURIComponent(userId)}`,
    /** Approval ids by creation time (ms), per status. */
    approvalsByStatus: (status: string) => `${p}:approvals:status:${status}`,
    /** A user's session: its run ids by creation time, and the one still active (if any). */
    sessionRuns: (userId: string, sessionId: string) => `${p}:session:${encodeURIComponent(userId)}:${sessionId}:runs`,
    sessionActive: (userId: string, sessionId: string) => `${p}:session:${encodeURIComponent(userId)}:${sessionId}:active`,
    /** Runs waiting for the session to be free (`ifBusy`), in submission order. */
    sessionQueue: (userId: string, sessionId: string) => `${p}:session:${encodeURIComponent(userId)}:${sessionId}:queue`,
    /** A cohort replay (`POST /v1/replays`): its settings, originals not started yet, replay ids, counted finishes, tokens spent or held, replays running, what each holds, skipped. */
    replayCohort: (id: string) => ({
      doc: `${p}:replays:${id}`,
      pending: `${p}:replays:${id}:pending`,
      replays: `${p}:replays:${id}:replays`,
      finished: `${p}:replays:${id}:finished`,
      tokens: `${p}:replays:${id}:tokens`,
      running: `${p}:replays:${id}:running`,
      held: `${p}:replays:${id}:held`,
      skipped: `${p}:replays:${id}:skipped`,
    }),
    /** Cohort replays running, by last progress (ms): how many a tenant runs at once. */
    openReplayCohorts: `${p}:replays:open`,
    /** The decision log (a hash chain): seq → entry JSON, seqs by time (ms), and the head (`<seq> <hash> <at ms>`). */
    audit: `${p}:audit`,
    auditByTime: `${p}:audit:at`,
    auditHead: `${p}:audit:head`,
    /** Webhook id → webhook JSON (with its secret). */
    webhooks: `${p}:webhooks`,
    /** The last delivery attempts of one webhook, newest first (a capped list). */
    webhookDeliveries: (webhookId: string) => `${p}:webhook:${webhookId}:deliveries`,
    /** The LangGraph store's items (features/store): item address → item JSON (Redis keeps it when no archive is set). */
    store: `${p}:store`,
    /** Company sign-in: user id → the roles of their latest verified token and when (`{roles, at}` JSON). */
    signIns: `${p}:sign-ins`,
    /** A user's LangGraph threads (their sessions, named): thread id → record JSON, and ids by last update (ms). */
    lgThreads: (userId: string) => `${p}:lg:threads:${encodeURIComponent(userId)}`,
    lgThreadsByTime: (userId: string) => `${p}:lg:threads:${encodeURIComponent(userId)}:at`,
  };
};

/**
 * Schedules (runs/schedule-service.ts): one hash tag for all, so a schedule, its
 * firings' history and its last run share a slot; a firing's run lives under its own tag.
 */
export const scheduleKeys = {
  /** Schedule id → record (JSON). */
  all: 'rein:{schedules}:all',
  /** One tenant's schedule ids (a set): what its limit counts and its listing reads. */
  tenant: (tenantId: string) => `rein:{schedules}:tenant:${tenantId}`,
  /** Set once every schedule stored before the per-tenant sets existed is in its tenant's set. */
  indexed: 'rein:{schedules}:indexed',
  /** The latest firings of one schedule, newest first (a capped list). */
  history: (scheduleId: string) => `rein:{schedules}:history:${scheduleId}`,
  /** The run the schedule's latest firing started: what `overlap: skip` looks at. */
  lastRun: (scheduleId: string) => `rein:{schedules}:last:${scheduleId}`,
};

/** The schedule queue's prefix (its BullMQ job schedulers and their firings): a hash tag of its own. */
export const SCHEDULE_QUEUE_PREFIX = '{rein-schedules}';

/** Non-terminal, non-parked runs by deadline (ms): what the deadline sweeper scans. */
export const DEADLINES_KEY = 'rein:deadlines';

/** Approval events staged before the commit that makes them true, until published (ms staged): the reaper re-drives them. */
export const APPROVAL_OUTBOX_KEY = 'rein:approval-outbox';

/**
 * Fair share's fleet-wide slots (`fairShareSlots`): one hash tag, so each turn is one
 * script on one cluster slot. `slots`: runs holding one; `ring`: tenants with a run
 * waiting, the next turn first; `line`: a tenant's runs waiting for a turn, oldest first.
 */
export const fairShareKeys = {
  slots: 'rein:fair:{fair}:slots',
  ring: 'rein:fair:{fair}:ring',
  line: (tenantId: string) => `rein:fair:{fair}:line:${encodeURIComponent(tenantId)}`,
};

/** With the archive or a checkpoint sink on: tenants with a decision log, whose heads the checkpoint pass copies out. */
export const AUDIT_TENANTS_KEY = 'rein:audit-tenants';

/** With a checkpoint sink: tenant → the head (`<seq> <hash>`) the sink last took, so a pass sends only heads that moved. */
export const AUDIT_SUNK_KEY = 'rein:audit-sunk';

/** Every non-terminal run by last change (ms): what the reaper scans. */
export const ACTIVE_RUNS_KEY = 'rein:active-runs';

/** With the archive on: finished runs not yet confirmed archived, by finish time (ms): the archive backlog the reaper re-drives. */
export const ARCHIVE_BACKLOG_KEY = 'rein:archive-backlog';

/** With the archive on: archived runs whose keys are still in Redis, by finish time (ms): what hot retention drops. */
export const ARCHIVE_HOT_KEY = 'rein:archive-hot';

/** BullMQ prefix with a hash tag, so each queue's keys live in one cluster slot. */
export const QUEUE_PREFIX = '{rein}';

/**
 * The prefix of step-queue shard `shard`: shard 0 keeps `{rein}` (a single-shard
 * deployment's queue, unchanged), shard n is `{rein-n}`, a hash tag of its own.
 */
export const queuePrefix = (shard: number) => (shard === 0 ? QUEUE_PREFIX : `{rein-${shard}}`);

/**
 * The prefix of the step queue of shard `shard` for the workers of app version `version`:
 * the shard's hash tag, then the version (`{rein}@v42`), so every version's queue of a
 * shard shares its slot. No version: the shard's queue of a deployment before versions.
 */
export const stepQueuePrefix = (shard: number, version?: string) => (version ? `${queuePrefix(shard)}@${version}` : queuePrefix(shard));

/** The webhook queue's prefix: a hash tag of its own, so deliveries never share a step shard's slot whatever the shard count. */
export const WEBHOOK_QUEUE_PREFIX = '{rein-webhooks}';

/** A circuit breaker's fleet-wide state, one hash tag per dependency (`model:<name>`, `tool:<name>`). */
export const breakerKeys = (dependency: string) => {
  const p = `rein:breaker:{${dependency}}`;
  return { open: `${p}:open`, tripped: `${p}:tripped`, probe: `${p}:probe`, reporters: `${p}:reporters` };
};

/** The sorted set of leases of a fleet-wide concurrency limit (acquire-lease-3.lua). */
export const fleetLimitKey = (dependency: string) => `rein:limit:{${dependency}}`;

/** Where the chaos suite switches faults on: `toolHangUntil` (ms epoch) makes every tool hang until then. */
export const FAULTS_KEY = 'rein:faults';

/** State an app keeps in Rein's Redis: the key lives with the definition API. */
export { appStateKey } from '@rein/define/internal';

/**
 * The fleet's app versions (store/version-directory.ts), under one hash tag: `state`
 * (`promoted` → a version, `upgrade:<from>` → the version its runs move to), `live`
 * (member `<role>|<version>|<instance>`, scored by when its heartbeat lapses, ms) and
 * `seen` (`first:<version>`, `last:<version>`, ms).
 */
export const VERSION_KEYS = {
  state: 'rein:{versions}:state',
  live: 'rein:{versions}:live',
  seen: 'rein:{versions}:seen',
} as const;

/** What a version serves (its processes register it at start): the manifest `GET /v1/versions/:v/impact` compares. */
export const versionManifestKey = (version: string) => `rein:{versions}:manifest:${version}`;
/** A version's runs that are not finished: run id → `<status>|<pending approvals>|<tenant>`. */
export const versionRunsKey = (version: string) => `rein:version:{${version}}:runs`;
/** A spent one-click approval link (its nonce), kept until the link would have expired. */
export const linkUseKey = (nonce: string) => `rein:link:{${nonce}}`;
