import { runStatusSchema, TERMINAL_STATUSES } from '@rein/contract';
import { Counter, collectDefaultMetrics, exponentialBuckets, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Rein's Prometheus metrics. Labels are bounded (agent, status, reason, model, tool,
 * outcome) — never run ids or user ids. Latency and token buckets follow the
 * OpenTelemetry GenAI conventions rather than prom-client's web-request defaults.
 */
export function createMetrics(service: string) {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, prefix: 'rein_process_' });
  const registers = [registry];
  return {
    registry,
    webhookDeliveries: new Counter({
      name: 'rein_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome (delivered, failed = will retry, gave_up, refused, not_enqueued)',
      labelNames: ['outcome'],
      registers,
    }),
    runsSubmitted: new Counter({ name: 'rein_runs_submitted_total', help: 'Runs accepted by the API', labelNames: ['agent'], registers }),
    runsFinished: new Counter({
      name: 'rein_runs_finished_total',
      help: 'Runs that reached a terminal status',
      labelNames: ['agent', 'status', 'reason'],
      registers,
    }),
    steps: new Counter({ name: 'rein_steps_total', help: 'Steps processed, by outcome', labelNames: ['outcome'], registers }),
    stepDuration: new Histogram({
      name: 'rein_step_duration_seconds',
      help: 'Wall time of one ReAct step (model call + tools)',
      labelNames: ['outcome'],
      buckets: exponentialBuckets(0.01, 2, 14),
      registers,
    }),
    modelDuration: new Histogram({
      name: 'rein_model_request_duration_seconds',
      help: 'Model call duration (gen_ai.client.operation.duration)',
      labelNames: ['model', 'outcome'],
      buckets: exponentialBuckets(0.01, 2, 14),
      registers,
    }),
    modelTokens: new Counter({
      name: 'rein_model_tokens_total',
      help: 'Tokens counted against runs, by model, type (prompt / completion) and tenant',
      labelNames: ['model', 'type', 'tenant'],
      registers,
    }),
    replayTokens: new Counter({
      name: 'rein_replay_model_tokens_total',
      help: 'Tokens replays spent (counted apart from rein_model_tokens_total), by model, type (prompt / completion) and tenant',
      labelNames: ['model', 'type', 'tenant'],
      registers,
    }),
    replayCost: new Counter({
      name: 'rein_replay_model_cost_usd_total',
      help: 'Money replays spent on model calls (counted apart from rein_model_cost_usd_total), by model and tenant',
      labelNames: ['model', 'tenant'],
      registers,
    }),
    modelUsageUnderreported: new Counter({
      name: 'rein_model_usage_underreported_total',
      help: 'Completion tokens a model endpoint left out of its reported usage (charged from Rein’s own count instead)',
      labelNames: ['model'],
      registers,
    }),
    /** gen_ai.client.token.usage: tokens per model call, OpenTelemetry's GenAI buckets. */
    modelTokenUsage: new Histogram({
      name: 'rein_model_token_usage_tokens',
      help: 'Tokens per model call by model and type (gen_ai.client.token.usage)',
      labelNames: ['model', 'type'],
      buckets: exponentialBuckets(1, 4, 14),
      registers,
    }),
    toolCalls: new Counter({
      name: 'rein_tool_calls_total',
      help: 'Tool calls by tool and outcome',
      labelNames: ['tool', 'outcome'],
      registers,
    }),
    toolDuration: new Histogram({
      name: 'rein_tool_duration_seconds',
      help: 'Tool execution duration',
      labelNames: ['tool'],
      buckets: exponentialBuckets(0.001, 2, 16),
      registers,
    }),
    effectsUncertain: new Counter({
      name: 'rein_effects_uncertain_total',
      help: 'Write effects whose outcome is unknown after a crash and that were not re-run',
      labelNames: ['tool'],
      registers,
    }),
    compensations: new Counter({
      name: 'rein_compensations_total',
      help: 'Compensations (undo of a completed write) by tool and outcome: ok, failed, uncertain, replayed',
      labelNames: ['tool', 'outcome'],
      registers,
    }),
    scheduleFirings: new Counter({
      name: 'rein_schedule_firings_total',
      help: 'Schedule firings by outcome: started, skipped (overlap), missed (catchUp none), failed (refused)',
      labelNames: ['outcome'],
      registers,
    }),
    scheduleLag: new Histogram({
      name: 'rein_schedule_lag_seconds',
      help: 'From a schedule firing’s fire time to a worker taking it up',
      buckets: exponentialBuckets(0.01, 2, 16),
      registers,
    }),
    approvalsCreated: new Counter({
      name: 'rein_approvals_created_total',
      help: 'Approvals requested',
      labelNames: ['tool', 'risk'],
      registers,
    }),
    approvalsDecided: new Counter({
      name: 'rein_approvals_decided_total',
      help: 'Approval decisions',
      labelNames: ['tool', 'decision'],
      registers,
    }),
    approvalSla: new Counter({
      name: 'rein_approval_sla_total',
      help: 'Approvals that ended (decided or expired), by whether a person decided them within REIN_APPROVAL_SLA_MS (met="true")',
      labelNames: ['tool', 'risk', 'met'],
      registers,
    }),
    approvalDecisionsBy: new Counter({
      name: 'rein_approval_decisions_by_decider_total',
      help: 'Approvals decided by a person, by tenant and decider: a REIN_API_KEYS user id (a bounded list), else "company" (company sign-in)',
      labelNames: ['tenant', 'decider'],
      registers,
    }),
    modelPriceMissing: new Counter({
      name: 'rein_model_price_missing_total',
      help: 'Model calls charged 0 because REIN_MODEL_PRICES has no price for the model',
      labelNames: ['model'],
      registers,
    }),
    modelCost: new Counter({
      name: 'rein_model_cost_usd_total',
      help: 'Money spent on model calls (price table × tokens), by model and tenant',
      labelNames: ['model', 'tenant'],
      registers,
    }),
    storedBytes: new Counter({
      name: 'rein_stored_bytes_total',
      help: 'Redis memory held by finished runs, by tenant: each run counted once at its terminal commit (MEMORY USAGE of its keys); they then live for the trace TTL',
      labelNames: ['tenant'],
      registers,
    }),
    budgetStops: new Counter({
      name: 'rein_budget_stops_total',
      help: 'Runs stopped by a budget, quota, loop breaker or failure, by reason',
      labelNames: ['reason'],
      registers,
    }),
    breakerState: new Gauge({
      name: 'rein_breaker_state',
      help: 'Circuit breaker state as this process last saw it fleet-wide (0 closed, 1 half-open, 2 open)',
      labelNames: ['breaker'],
      registers,
    }),
    breakerEvents: new Counter({
      name: 'rein_breaker_events_total',
      help: 'Circuit breaker transitions',
      labelNames: ['breaker', 'event'],
      registers,
    }),
    bulkheadInFlight: new Gauge({
      name: 'rein_bulkhead_in_flight',
      help: 'Calls in flight per dependency in this process',
      labelNames: ['dependency'],
      registers,
    }),
    bulkheadRejections: new Counter({
      name: 'rein_bulkhead_rejections_total',
      help: 'Calls refused because a bulkhead stayed full past its wait',
      labelNames: ['dependency', 'scope'],
      registers,
    }),
    stepDelays: new Counter({
      name: 'rein_step_delays_total',
      help: 'Steps put back on the queue for later without spending them (open breaker, full bulkhead, model down)',
      labelNames: ['cause'],
      registers,
    }),
    archiveDeadLetters: new Counter({
      name: 'rein_archive_dead_letters_total',
      help: 'Finished runs the archive refused to store (kept in rein.dead_letters instead, out of the backlog)',
      registers,
    }),
    auditSinkBehind: new Gauge({
      name: 'rein_audit_checkpoint_sink_behind',
      help: 'Tenants whose decision-log head the checkpoint sink (REIN_AUDIT_CHECKPOINT_SINK) did not take in the last pass: the external copy lags (set by the checkpoint pass)',
      registers,
    }),
    auditLogsBehind: new Gauge({
      name: 'rein_audit_logs_behind_checkpoint',
      help: 'Tenants whose decision log no longer holds its last checkpoint in the archive: entries removed and the head rewound (set by the checkpoint pass)',
      registers,
    }),
    archiveWrites: new Counter({
      name: 'rein_archive_writes_total',
      help: 'Archive jobs that reached PostgreSQL, by result (written, unchanged = that revision was already there)',
      labelNames: ['result'],
      registers,
    }),
    archiveErrors: new Counter({
      name: 'rein_archive_errors_total',
      help: 'Archive operations that failed (write, retire = the hot-retention check, retention), retried later',
      labelNames: ['operation'],
      registers,
    }),
    archiveRetired: new Counter({
      name: 'rein_archive_retired_total',
      help: "Archived runs whose Redis keys hot retention dropped, or runs deleted by the archive's retention",
      labelNames: ['where'],
      registers,
    }),
    reaperRepairs: new Counter({
      name: 'rein_reaper_repairs_total',
      help: 'Runs the reaper found stuck and repaired',
      labelNames: ['kind'],
      registers,
    }),
    fetchLoopRestarts: new Counter({
      name: 'rein_worker_fetch_restarts_total',
      help: 'Step-queue workers replaced because their fetch loop had stopped (e.g. after a Redis Cluster master outage), by shard',
      labelNames: ['shard'],
      registers,
    }),
    mcpServerUp: new Gauge({
      name: 'rein_mcp_server_up',
      help: 'Whether this process is connected to the MCP server (1) or not (0: not started, or reconnecting)',
      labelNames: ['server'],
      registers,
    }),
    runsInState: new Gauge({
      name: 'rein_runs_in_state',
      help: 'Non-terminal runs by status (as of the last reaper pass)',
      labelNames: ['status'],
      registers,
    }),
    oldestInState: new Gauge({
      name: 'rein_run_oldest_in_state_seconds',
      help: 'How long the longest-waiting run has been in its status without a change',
      labelNames: ['status'],
      registers,
    }),
    approvalsPending: new Gauge({
      name: 'rein_approvals_pending',
      help: 'Approvals waiting for a decision (as of the last reaper pass)',
      registers,
    }),
    versionReroutes: new Counter({
      name: 'rein_version_reroutes_total',
      help: "Step jobs a worker found on its queue for a run of another app version, and sent on to that version's workers",
      registers,
    }),
    jobWait: new Histogram({
      name: 'rein_queue_job_wait_seconds',
      help: 'Time a step job waited in the queue before a worker took it (after any intended delay)',
      labelNames: ['job'],
      buckets: exponentialBuckets(0.005, 2, 16),
      registers,
    }),
    approvalWait: new Histogram({
      name: 'rein_approval_wait_seconds',
      help: 'Time from an approval request to its decision or expiry, by tool, risk and decision',
      labelNames: ['tool', 'risk', 'decision'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200],
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** How long a scrape waits for Redis before it counts Redis as down. */
const COLLECT_TIMEOUT_MS = 1000;

/** Redis's answer, or a rejection once the scrape cannot wait any longer. */
async function withinScrape<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('redis did not answer in time')), COLLECT_TIMEOUT_MS);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Queue depth by state and shard, read from BullMQ at scrape time. Exported by the API
 * (which always runs, so autoscaling can start workers from zero). BullMQ's `wait` list
 * misses prioritized and delayed jobs, so every state is reported and dashboards add
 * them up. `shards[i]` counts shard i's jobs. While Redis is away the series are left
 * out (not zero, not a failed scrape): the scrape still answers, and `rein_redis_up`
 * says why they are missing.
 */
export function registerQueueDepth(metrics: Metrics, shards: Array<() => Promise<Record<string, number>>>) {
  return new Gauge({
    name: 'rein_queue_jobs',
    help: 'Step-queue jobs by state (waiting, prioritized, delayed, active, failed) and shard; absent while Redis is unreachable',
    labelNames: ['state', 'shard'],
    registers: [metrics.registry],
    async collect() {
      try {
        const counted = await withinScrape(Promise.all(shards.map((counts) => counts())));
        this.reset(); // a shard dropped from the list must not keep its last value
        counted.forEach((byState, shard) => {
          for (const state of ['waiting', 'prioritized', 'delayed', 'active', 'failed'])
            this.set({ state, shard: String(shard) }, byState[state] ?? 0);
        });
      } catch {
        this.reset();
      }
    },
  });
}

/**
 * `rein_archive_backlog`: finished runs not yet confirmed archived, read from the shared
 * backlog in Redis at scrape time by every process (zero with the archive off), so each series
 * is the fleet's count and `max` across them is the truth (`sum` would count it once per
 * process). Left out while Redis does not answer.
 */
export function registerArchiveBacklog(metrics: Metrics, backlogSize: () => Promise<number>) {
  return new Gauge({
    name: 'rein_archive_backlog',
    help: 'Finished runs not yet confirmed archived in PostgreSQL, fleet-wide (every process reports the same count: aggregate with max)',
    registers: [metrics.registry],
    async collect() {
      try {
        this.set(await withinScrape(backlogSize()));
      } catch {
        this.reset();
      }
    },
  });
}

/** `rein_redis_up`: whether this process's Redis answers a PING within the scrape (1) or not (0). */
export function registerRedisUp(metrics: Metrics, redis: { ping(): Promise<unknown> }) {
  return new Gauge({
    name: 'rein_redis_up',
    help: "Whether this process's Redis answered a PING at scrape time (1) or not (0)",
    registers: [metrics.registry],
    async collect() {
      this.set(
        await withinScrape(redis.ping()).then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
}

/** What the version gauges read: each known version's live workers and unfinished runs (store/version-directory.ts). */
export interface VersionCensus {
  list(): Promise<VersionCount[]>;
}
interface VersionCount {
  version: string;
  workers: number;
  runs: Partial<Record<string, number>>;
  onQueue: number;
  /** Jobs on the version's queues (any kind); absent: not counted by this census. */
  jobs?: number;
}

/**
 * Per app version, read at scrape time by the API: live workers, unfinished runs by
 * status, and the runs waiting for a version no worker runs (queued, running or resuming
 * ones of a version with no live worker: their jobs sit on a queue nobody takes). The versions are
 * the directory's, at most MAX_LISTED_VERSIONS of them: the label cannot explode.
 */
export function registerVersionGauges(metrics: Metrics, census: VersionCensus) {
  // The gauges are collected side by side: they share one read of the census per scrape.
  let reading: Promise<VersionCount[]> | undefined;
  const read = () => {
    reading ??= withinScrape(census.list())
      .catch((): VersionCount[] => [])
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  const gauge = (name: string, help: string, labelNames: string[], set: (g: Gauge, v: VersionCount) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [metrics.registry],
      async collect() {
        const versions = await read();
        this.reset();
        for (const v of versions) set(this, v);
      },
    });
  gauge('rein_version_workers', 'Live workers per app version', ['version'], (g, v) => g.set({ version: v.version }, v.workers));
  // Every unfinished status of every listed version, zero included: a drained version shows as drained.
  const unfinished = runStatusSchema.options.filter((s) => !TERMINAL_STATUSES.includes(s));
  gauge('rein_version_runs', 'Unfinished runs per app version and status', ['version', 'status'], (g, v) => {
    for (const status of unfinished) g.set({ version: v.version, status }, v.runs[status] ?? 0);
  });
  gauge(
    'rein_version_backlog',
    "Runs waiting on a job of an app version (queued, running, or resuming): what each version's workers scale on",
    ['version'],
    (g, v) => g.set({ version: v.version }, v.onQueue),
  );
  gauge(
    'rein_version_jobs',
    "Jobs on an app version's queues, waiting for its workers or running (steps, resumes, wake-ups, undos, archive jobs)",
    ['version'],
    (g, v) => {
      if (v.jobs !== undefined) g.set({ version: v.version }, v.jobs);
    },
  );
  gauge(
    'rein_runs_waiting_for_version',
    'Runs waiting on a job of an app version no live worker runs (queued, running, or resuming): until one starts or an upgrade moves them',
    ['version'],
    (g, v) => g.set({ version: v.version }, v.workers > 0 ? 0 : v.onQueue),
  );
}
