import type { AgentCatalog, App, Tool } from '@rein/define/internal';
import { McpManager } from '../adapters/mcp/mcp-manager.js';
import { type ArchivePool, createArchivePool, guardedQueries } from '../adapters/postgres/archive-pool.js';
import { AuditArchive } from '../adapters/postgres/audit-archive.js';
import { checkArchiveSchema } from '../adapters/postgres/migrations.js';
import { PgItemStore } from '../adapters/postgres/pg-item-store.js';
import { RunArchive } from '../adapters/postgres/run-archive.js';
import { type Enqueue, StepScheduler } from '../adapters/queue/job-catalog.js';
import { ScheduleQueue } from '../adapters/queue/schedule-queue.js';
import { ApprovalFeed } from '../adapters/redis/approval-feed.js';
import { AuditLog } from '../adapters/redis/audit-log.js';
import { DecisionJournal } from '../adapters/redis/decision-journal.js';
import { RedisEffectLedger } from '../adapters/redis/effect-ledger.js';
import { HotRuns } from '../adapters/redis/hot-runs.js';
import { RedisIdempotencyKeys } from '../adapters/redis/idempotency-keys.js';
import { bullConnection, checkRedisSettings, connectRedis, type RedisClient, type RedisRole } from '../adapters/redis/redis.js';
import { RedisItemStore } from '../adapters/redis/redis-item-store.js';
import { RedisOutages } from '../adapters/redis/redis-outages.js';
import { ReplayCohortStore } from '../adapters/redis/replay-cohort-store.js';
import { RunStore } from '../adapters/redis/run-store.js';
import { ScheduleStore } from '../adapters/redis/schedule-store.js';
import { RedisSessions } from '../adapters/redis/session-store.js';
import { SignInStore } from '../adapters/redis/sign-in-store.js';
import { TenantQuotas } from '../adapters/redis/tenant-quotas.js';
import { VersionDirectory } from '../adapters/redis/version-directory.js';
import { CircuitBreakers } from '../adapters/resilience/circuit-breakers.js';
import { FleetLimit } from '../adapters/resilience/fleet-limit.js';
import { setupTracing, type Tracing } from '../adapters/tracing/tracing-setup.js';
import { type A2aPush, createA2aPush } from '../features/a2a/a2a-push.js';
import { PushConfigStore } from '../features/a2a/push-config-store.js';
import { type ApprovalService, createApprovalService } from '../features/approvals/approval-service.js';
import { archivePlug, createRunArchiving, type RunArchiving } from '../features/archive/run-archiving.js';
import { auditProofFrom } from '../features/audit/audit-proof.js';
import { createReceipts, type Receipts } from '../features/audit/receipts.js';
import { type Compensator, compensationPlug, createCompensator } from '../features/compensation/compensation.js';
import { createSignIns, type SignIns } from '../features/identity/sign-ins.js';
import { createRemoteAgents } from '../features/remote-agents/remote-agents.js';
import { cohortPlug, createReplayCohortService, type ReplayCohortService } from '../features/replay/replay-cohort-service.js';
import { createReplayService, type ReplayService } from '../features/replay/replay-service.js';
import { createFairShare, type FairShare, fairSharePlug } from '../features/runs/fair-share.js';
import { createRunService, type RunService } from '../features/runs/run-service.js';
import { createSessionQueue, type SessionQueue, sessionPlug } from '../features/runs/session-queue.js';
import { createScheduleService, type ScheduleService } from '../features/schedules/schedule-service.js';
import { createStoreService, type StoreService } from '../features/store/store-service.js';
import { createRunTree, treePlug } from '../features/tree/run-tree.js';
import { WebhookDispatcher, webhookPlug } from '../features/webhooks/webhook-dispatcher.js';
import { WebhookStore } from '../features/webhooks/webhook-store.js';
import { resolveAppVersion } from '../policy/app/app-version.js';
import { manifestOf } from '../policy/app/version-manifest.js';
import { checkPrices, fleetModels } from '../policy/budget/cost.js';
import type { EffectLedger } from '../policy/ports/effect-ledger.js';
import type { SessionRegistry } from '../policy/ports/session-registry.js';
import { currentVersion, routeVersion } from '../policy/run/version-route.js';
import type { DelegationLimits } from '../policy/step/call-plan.js';
import { deciderLabels, knownToolNames } from '../policy/step/commit-facts.js';
import { ArchiveUnavailableError, ReinError } from '../shared/errors.js';
import type { InputFilter } from '../shared/guards/input-filter.js';
import { createPiiMasker, type PiiMasker } from '../shared/guards/pii-masker.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { createMetrics, type Metrics, registerArchiveBacklog, registerRedisUp } from '../shared/metrics.js';
import type { ReinOptions } from '../shared/options.js';
import { createTransitionApplier, type TransitionApplier } from '../step/apply-transition.js';
import { createChildRuns, type SpawnChild } from '../step/child-runs.js';
import { createRegistry, type Registry } from './registry.js';
import { createRunEndHooks } from './run-end-hooks.js';

/**
 * What every Rein process shares: the API and the approver run on it as is. The worker's
 * extra pieces are in WorkerRuntime. The runtime is built from compiled options; no
 * component here reads an environment variable.
 */
export interface Runtime {
  options: ReinOptions;
  app: App;
  /** The app version this process runs (REIN_APP_VERSION, the app's `version`, or its content hash). */
  version: string;
  /** The fleet's versions: promoted, upgrading, alive (store/version-directory.ts). */
  versions: VersionDirectory;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  /** Says a Redis outage in a few log lines: every connection and queue of the process reports through it. */
  redisOutages: RedisOutages;
  store: RunStore;
  /** Who holds each session, the runs queued behind it, and its runs' index. */
  sessionRegistry: SessionRegistry;
  /** The one writer of run records (engine/apply-transition.ts). */
  applier: TransitionApplier;
  feed: ApprovalFeed;
  journal: DecisionJournal;
  ledger: EffectLedger;
  scheduler: StepScheduler;
  enqueue: Enqueue;
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  quotas: TenantQuotas;
  runs: RunService;
  /** Replays, forks and diffs of finished runs (docs/replay.md). */
  replays: ReplayService;
  /** Cohort replays (`POST|GET /v1/replays`), advanced as their replays finish. */
  cohorts: ReplayCohortService;
  /** People's latest company sign-ins (REIN_OIDC_ISSUER set): recorded by the services, read by schedules. */
  signIns?: SignIns;
  /** The LangGraph store's items and agents' memory (features/store). */
  itemStore: StoreService;
  /** Agents on a schedule: CRUD, and the firings workers take from `scheduleQueue`. */
  schedules: ScheduleService;
  scheduleQueue: ScheduleQueue;
  approvals: ApprovalService;
  inputFilter: InputFilter;
  masker: PiiMasker;
  tracing: Tracing;
  /** The tenants' decision logs (hash chains): appended by the applier and the webhook service. */
  audit: AuditLog;
  /** Signs a decision's log entry as its receipt (REIN_AUDIT_SIGNING_KEY). */
  receipts: Receipts;
  webhookStore: WebhookStore;
  dispatcher: WebhookDispatcher;
  /** A2A tasks' push-notification configs, and the notifications sent at each change of a task's state. */
  pushConfigs: PushConfigStore;
  a2aPush: A2aPush;
  compensator: Compensator;
  /** The PostgreSQL archive of finished runs, when REIN_ARCHIVE_URL is set. */
  archive?: { pool: ArchivePool; runs: RunArchive; archiving: RunArchiving };
  close(): Promise<void>;
}

/**
 * The worker's runtime: the shared one plus what guards the calls it makes (breakers, the
 * fleet-wide model limit) and what only its jobs and steps use.
 */
export interface WorkerRuntime extends Runtime {
  breakers: CircuitBreakers;
  fleetLimit: FleetLimit;
  /** Runs queued for a busy session (`ifBusy`), admitted one at a time by `admit` jobs. */
  sessionQueue: SessionQueue;
  /** Tenants' runs waiting for a concurrency slot (`queueBeyondLimit`), started by `slot` jobs. */
  fairShare: FairShare;
  /** Starts `call_<agent>` children (the step engine). */
  spawnChild: SpawnChild;
  /** REIN_MAX_AGENT_DEPTH, REIN_MAX_CHILDREN_PER_STEP. */
  delegation: DelegationLimits;
}

export interface RuntimeOptions {
  /**
   * Connect the app's MCP servers before the runtime is returned (their tools live in
   * `tools` while connected): the processes that run tool calls (workers) or judge edited
   * arguments (approver) do; the API does not need them.
   */
  mcp?: boolean;
}

/**
 * Wires the shared pieces of a Rein process (API, approver, test harnesses) from its
 * compiled options and the app it runs; services add their own edges. Every service and
 * test harness builds its agents and tools here, through `createRegistry`.
 */
export function createRuntime(
  options: ReinOptions,
  service: string,
  role: RedisRole,
  app: App,
  opts: RuntimeOptions = {},
): Promise<Runtime> {
  return buildRuntime(options, service, role, app, opts.mcp ?? false, () => ({}));
}

/** The worker's runtime: MCP servers connected, and breakers guarding tool, model and undo calls. */
export async function createWorkerRuntime(options: ReinOptions, service: string, app: App): Promise<WorkerRuntime> {
  const rt = await buildRuntime(options, service, 'worker', app, true, (redis, logger, metrics) => ({
    breakers: new CircuitBreakers(
      redis,
      {
        errorThresholdPercentage: options.resilience.breakerErrorPercent,
        resetTimeoutMs: options.resilience.breakerResetMs,
        volumeThreshold: options.resilience.breakerVolume,
        rollingCountTimeoutMs: options.resilience.breakerWindowMs,
        probeTimeoutMs: options.model.timeoutMs + 5_000,
        fleetWorkers: options.resilience.breakerFleetWorkers,
      },
      logger,
      metrics,
    ),
    fleetLimit: new FleetLimit(redis),
  }));
  const { store, sessionRegistry, applier, ledger, agents, enqueue, quotas, compensator, logger } = rt;
  return {
    ...rt,
    sessionQueue: createSessionQueue({
      store,
      sessionRegistry,
      applier,
      sessions: sessionSettings(options),
      undoSettled: (run) => compensator.settled(run),
      waitingForSlot: (run) => quotas.waiting(run.tenantId, run.id),
      logger,
    }),
    fairShare: createFairShare({ store, quotas, enqueue }),
    spawnChild: createChildRuns({ store, ledger, agents, enqueue }),
    delegation: { maxDepth: options.limits.maxAgentDepth, maxChildrenPerStep: options.limits.maxChildrenPerStep },
  };
}

/** What a run's session keeps of its history (REIN_SESSION_*), and the model its window is counted for. */
const sessionSettings = (options: ReinOptions) => ({
  windowTokens: options.sessions.windowTokens,
  toolTraffic: options.sessions.toolTraffic,
  model: options.model.name,
});

/** What a role adds to the shared runtime; the breakers, when present, also guard the compensator's undo calls. */
type Extras = Partial<Pick<WorkerRuntime, 'breakers'>>;

async function buildRuntime<X extends Extras>(
  options: ReinOptions,
  service: string,
  role: RedisRole,
  app: App,
  connectMcp: boolean,
  extras: (redis: RedisClient, logger: Logger, metrics: Metrics) => X,
): Promise<Runtime & X> {
  const masker = createPiiMasker(app.guards.pii);
  const logger = createLogger(options.logLevel, service, masker);
  checkPrices(options.model, app.agents, logger);
  const tracing = setupTracing(options.tracing, service, masker, logger);
  const metrics = createMetrics(service);
  const redisOutages = new RedisOutages(logger);
  const redis = await connectRedis(options.redis, role, redisOutages);
  await checkRedisSettings(redis, logger);
  registerRedisUp(metrics, redis);
  const bull = bullConnection(options.redis, role, redisOutages, 'queues');
  const queueError = (err: Error) => redisOutages.error('queues', err, 'queue error');
  const scheduleQueue = new ScheduleQueue(bull);
  scheduleQueue.queue.on('error', queueError);
  // The store (LangGraph's client.store, agents' memory): in PostgreSQL with the archive, in Redis otherwise.
  const storePool = options.archive.url
    ? createArchivePool(options.archive.url, { max: 2, applicationName: `${service}-store`, onError: queueError })
    : undefined;
  const itemStore = createStoreService({
    items: storePool ? new PgItemStore(storePool) : new RedisItemStore(redis),
    maxValueBytes: options.store.maxValueBytes,
    maxItems: options.store.maxItems,
  });
  const remoteAgents = createRemoteAgents(app.remoteAgents, { redis, allowPrivate: options.remoteAgents.allowPrivate, logger });
  let registry: Registry;
  let mcp: McpManager;
  let versions: VersionDirectory;
  let scheduler: StepScheduler | undefined;
  try {
    registry = createRegistry(
      app,
      { redis },
      { faultInjection: options.resilience.faultInjection === 'on', memory: itemStore, remoteAgents },
    );
    // Before MCP servers join: a server's tools are stood for by its declaration.
    const declared = [...registry.tools.values()];
    const version = resolveAppVersion(app, declared, options.appVersion);
    versions = new VersionDirectory(redis, version, role === 'worker' ? 'worker' : service === 'approver' ? 'approver' : 'api', (err) =>
      redisOutages.error('redis', err, 'could not refresh the fleet version state'),
    );
    const directory = versions;
    scheduler = new StepScheduler(
      bull,
      options.queue.stepAttempts,
      options.queue.shards,
      { own: version, route: (job) => routeVersion(job, directory.known(), version) },
      queueError,
    );
    mcp = new McpManager(app.mcpServers, registry.tools, { logger, metrics });
    if (connectMcp) await Promise.all([mcp.start(), remoteAgents.start(registry.tools)]);
    await versions.start();
    // What this version serves, for a deploy's impact check (its MCP servers stood for by their declarations).
    await versions.register(manifestOf(version, app.agents, declared, Object.keys(app.mcpServers), new Date().toISOString()));
  } catch (err) {
    // A bad tools factory or an MCP server that cannot start: leave no connection behind.
    await storePool?.end();
    await scheduler?.close();
    await scheduleQueue.close();
    bull.disconnect();
    redis.disconnect();
    await tracing.shutdown();
    throw err;
  }
  const { tools, agents, inputFilter } = registry;
  const added = extras(redis, logger, metrics);
  const webhookStore = new WebhookStore(redis);
  const dispatcher = new WebhookDispatcher(bull, webhookStore, metrics, logger, { consoleUrl: options.webhooks.consoleUrl });
  dispatcher.queue.on('error', queueError);
  // Start with the queues' connections ready: one still handshaking when Redis drops rejects where nobody listens.
  await Promise.all([...scheduler.queues, scheduleQueue.queue, dispatcher.queue].map((q) => q.waitUntilReady()));
  const store = new RunStore(redis, options.retention.traceTtlDays * 86_400, metrics);
  const hot = new HotRuns(redis, store);
  // Every process reports the fleet's backlog (zero with the archive off): dashboards take the max.
  registerArchiveBacklog(metrics, () => hot.backlogSize());
  const feed = new ApprovalFeed(redis, dispatcher.onFeedEvent);
  const sessionRegistry = new RedisSessions(redis, options.retention.traceTtlDays * 86_400, store);
  const ledger = new RedisEffectLedger(redis);
  const journal = new DecisionJournal(redis);
  const quotas = new TenantQuotas(redis, options.quotas);
  const enqueue = scheduler.enqueue;
  let archive: Runtime['archive'];
  try {
    archive = options.archive.url ? await openArchive(options, service, hot, enqueue, metrics, logger) : undefined;
  } catch (err) {
    await mcp.close();
    await scheduler.close();
    await dispatcher.close();
    bull.disconnect();
    redis.disconnect();
    await tracing.shutdown();
    throw err;
  }
  // With the archive on, the decision log is kept there beyond the hot retention too.
  // With an audit key, decisions get signed receipts and heads are checkpointed signed (features/audit/audit-proof.ts).
  const audit = new AuditLog(
    redis,
    logger,
    Date.now,
    archive ? { cold: new AuditArchive(guardedQueries(archive.pool)), retentionMs: options.archive.hotRetentionMs } : undefined,
    await auditProofFrom(options.audit, options.webhooks.allowPrivate),
  );
  const receipts = createReceipts(audit);
  // The applier is built first; the features that commit through it plug into its run-end hooks below.
  const runEnd = createRunEndHooks();
  const applier = createTransitionApplier({
    store,
    quotas,
    feed,
    enqueue,
    cancelExpiry: scheduler.cancelExpiry,
    metrics,
    knownTool: knownToolNames(tools, agents),
    approvalLoad: { slaMs: options.approvals.slaMs, decider: deciderLabels(options.http.apiKeys ?? []) },
    audit,
    hooks: runEnd,
  });
  const ceilings = {
    maxSteps: options.limits.maxStepsCeiling,
    maxTokens: options.limits.maxTokensCeiling,
    timeoutMs: options.limits.timeoutCeilingMs,
  };
  const sessions = sessionSettings(options);
  const tree = createRunTree({ store, applier, enqueue, logger });
  const compensator = createCompensator({
    store,
    applier,
    ledger,
    tools,
    agents,
    enqueue,
    metrics,
    logger,
    emit: async (tenantId, type, key, data) => {
      await dispatcher.emit(tenantId, type, key, data);
    },
    toolTimeoutMs: options.tools.timeoutMs,
    approvalTtlMs: options.approvals.ttlMs,
    maxResultBytes: options.tools.maxResultBytes,
    // A rolled-back run's session waits for its undo: once it ends, the next queued run may start.
    onSettled: async (run) => {
      if (run.interruption?.rollback && run.sessionId)
        await enqueue('admit', { runId: run.id, cause: 'undone', traceparent: run.traceparent });
    },
    // Only the worker runs undo calls; elsewhere the compensator only requests and records.
    ...(added.breakers ? { breakers: added.breakers } : {}),
  });
  const runs = createRunService({
    store,
    sessionRegistry,
    idempotencyKeys: new RedisIdempotencyKeys(redis),
    applier,
    journal,
    agents,
    enqueue,
    metrics,
    quotas,
    ceilings,
    sessions,
    masker,
    compensator,
    currentVersion: () => currentVersion(versions.known(), versions.own),
    ...(archive ? { archive: archive.runs } : {}),
    versionWorkers: { route: (run) => routeVersion(run, versions.known(), versions.own), workersOf: (v) => versions.workersOf(v) },
  });
  const replayModels = fleetModels(options.model, app.agents);
  const replays = createReplayService({
    store,
    quotas,
    enqueue,
    metrics,
    ceilings,
    knownModel: (m) => replayModels.has(m) || Object.hasOwn(options.model.prices, m),
    visibleRun: runs.record,
    currentVersion: () => currentVersion(versions.known(), versions.own),
    liveWorkers: async (version) => (await versions.list()).find((f) => f.version === version)?.workers ?? 0,
  });
  const cohorts = createReplayCohortService({
    store,
    cohorts: new ReplayCohortStore(redis, options.retention.traceTtlDays * 86_400),
    replays,
    perTenant: options.replays.cohortsPerTenant,
    // A live cohort sees a replay finish at least this often: a run ends by its deadline.
    staleAfterMs: 2 * options.limits.timeoutCeilingMs,
    logger,
  });
  const signIns = options.oidc.issuer
    ? createSignIns({ store: new SignInStore(redis), standingMs: options.oidc.ownerStandingMs, logger })
    : undefined;
  const schedules = createScheduleService({
    store: new ScheduleStore(redis),
    timers: scheduleQueue,
    runs,
    runStore: store,
    agents,
    metrics,
    logger,
    perTenant: options.schedules.perTenant,
    audit,
    identities: options.http.apiKeys?.map(({ tenantId, userId, roles }) => ({ tenantId, userId, roles })),
    ...(signIns ? { signIns } : {}),
  });
  const pushConfigs = new PushConfigStore(redis, options.retention.traceTtlDays * 86_400);
  const a2aPush = createA2aPush({ configs: pushConfigs, store, dispatcher, logger, metrics });
  // What a run's end sets off, in this order. The archive is last: its job reads what the
  // plugs before it wrote. A plug that throws leaves the run in the active-runs index, and
  // the reaper runs the hooks again.
  runEnd.plug([
    // First: what still works elsewhere for the run stops before anything is undone.
    remoteAgents.plug,
    cohortPlug(cohorts),
    webhookPlug(dispatcher),
    compensationPlug(compensator, logger),
    treePlug(tree),
    sessionPlug(enqueue),
    fairSharePlug(quotas, enqueue),
    // After the plugs that move other runs: a push that cannot be enqueued holds up only the archive (the reaper retries both).
    a2aPush.plug(),
    ...(archive ? [archivePlug(archive.archiving)] : []),
  ]);
  return {
    options,
    app,
    version: versions.own,
    versions,
    logger,
    metrics,
    redis,
    redisOutages,
    store,
    sessionRegistry,
    applier,
    feed,
    journal,
    ledger,
    scheduler,
    enqueue,
    tools,
    agents,
    quotas,
    runs,
    replays,
    cohorts,
    schedules,
    itemStore,
    ...(signIns ? { signIns } : {}),
    scheduleQueue,
    approvals: createApprovalService({
      store,
      applier,
      receipts,
      tools,
      escalation: options.approvals.escalation,
      slaMs: options.approvals.slaMs,
      ...(archive ? { archive: archive.runs } : {}),
    }),
    ...(archive ? { archive } : {}),
    inputFilter,
    masker,
    tracing,
    audit,
    receipts,
    webhookStore,
    dispatcher,
    pushConfigs,
    a2aPush,
    compensator,
    ...added,
    async close() {
      added.breakers?.shutdown();
      await versions.stop();
      await mcp.close();
      await scheduler.close();
      await scheduleQueue.close();
      await dispatcher.close();
      bull.disconnect();
      redis.disconnect();
      await archive?.pool.end();
      await storePool?.end();
      await tracing.shutdown(); // flush the last spans
    },
  };
}

/**
 * The archive's pool, its schema checked (a service does not start on a schema it does
 * not fit: ArchiveSchemaError says what to do), and the archiving built over it.
 */
async function openArchive(
  options: ReinOptions,
  service: string,
  hot: HotRuns,
  enqueue: Enqueue,
  metrics: Metrics,
  logger: Logger,
): Promise<NonNullable<Runtime['archive']>> {
  const pool = createArchivePool(options.archive.url as string, {
    applicationName: service,
    onError: (err) => logger.warn({ err: err.message }, 'archive connection lost'),
  });
  try {
    await checkArchiveSchema(pool);
  } catch (err) {
    await pool.end();
    // Said in one line by the service's start (exitOnStartError): a schema to migrate, or a server that does not answer.
    throw err instanceof ReinError ? err : new ArchiveUnavailableError(err);
  }
  const runs = new RunArchive(pool);
  const archiving = createRunArchiving({
    hot,
    archive: runs,
    enqueue,
    metrics,
    logger,
    hotRetentionMs: options.archive.hotRetentionMs,
    retentionDays: options.archive.retentionDays,
    staleMs: options.maintenance.reaperStaleMs,
  });
  return { pool, runs, archiving };
}
