import type { AgentCatalog } from './agents/agent-profile.js';
import type { App } from './app/define-app.js';
import { createRegistry, type Registry } from './app/registry.js';
import { type ApprovalService, createApprovalService } from './approvals/approval-service.js';
import { createDecisionLog, type DecisionLog } from './approvals/decision-log.js';
import { checkPrices } from './budgets/cost.js';
import { TenantQuotas } from './budgets/tenant-quotas.js';
import type { Config } from './config.js';
import { createTransitionApplier, type TransitionApplier } from './engine/apply-transition.js';
import { type Compensator, createCompensator } from './engine/compensation.js';
import type { InputFilter } from './guards/input-filter.js';
import { createPiiMasker, type PiiMasker } from './guards/pii-masker.js';
import { createLogger, type Logger } from './logger.js';
import { McpManager } from './mcp/mcp-manager.js';
import { createMetrics, type Metrics, registerRedisUp } from './metrics.js';
import { type Enqueue, StepScheduler } from './queue/job-catalog.js';
import { bullConnection, checkRedisSettings, connectRedis, type RedisClient, type RedisRole } from './redis.js';
import { CircuitBreakers } from './resilience/circuit-breakers.js';
import { FleetLimit } from './resilience/fleet-limit.js';
import { createRunService, type RunService } from './runs/run-service.js';
import { ApprovalFeed } from './store/approval-feed.js';
import { AuditLog } from './store/audit-log.js';
import { DecisionJournal } from './store/decision-journal.js';
import { EffectLedger } from './store/effect-ledger.js';
import { RunStore } from './store/run-store.js';
import type { Tool } from './tools/tool.js';
import { setupTracing, type Tracing } from './tracing/tracing-setup.js';
import { WebhookDispatcher } from './webhooks/webhook-dispatcher.js';
import { createWebhookService, type WebhookService } from './webhooks/webhook-service.js';
import { WebhookStore } from './webhooks/webhook-store.js';

export interface Runtime {
  config: Config;
  app: App;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  store: RunStore;
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
  approvals: ApprovalService;
  inputFilter: InputFilter;
  masker: PiiMasker;
  breakers: CircuitBreakers;
  fleetLimit: FleetLimit;
  /** The app's MCP servers; their tools live in `tools` while connected (see RuntimeOptions.mcp). */
  mcp: McpManager;
  tracing: Tracing;
  webhooks: WebhookService;
  /** The tenants' decision logs (hash chains): appended by the applier and the webhook service. */
  audit: AuditLog;
  decisionLog: DecisionLog;
  webhookStore: WebhookStore;
  dispatcher: WebhookDispatcher;
  compensator: Compensator;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /**
   * Connect the app's MCP servers before the runtime is returned: the processes that run
   * tool calls (workers) or judge edited arguments (approver) do; the API does not need them.
   */
  mcp?: boolean;
}

/**
 * Wires the shared pieces of a Rein process from its config and the app it runs;
 * services add their own edges. Every service and test harness builds its agents and
 * tools here, through `createRegistry`.
 */
export async function createRuntime(
  config: Config,
  service: string,
  role: RedisRole,
  app: App,
  opts: RuntimeOptions = {},
): Promise<Runtime> {
  const masker = createPiiMasker(app.guards.pii);
  const logger = createLogger(config.LOG_LEVEL, service, masker);
  checkPrices(config, app.agents, logger);
  const tracing = setupTracing(config, service, masker, logger);
  const metrics = createMetrics(service);
  const redis = await connectRedis(config, role, logger);
  await checkRedisSettings(redis, logger);
  registerRedisUp(metrics, redis);
  const bull = bullConnection(config, role, logger);
  const scheduler = new StepScheduler(bull, config.REIN_STEP_ATTEMPTS, config.REIN_QUEUE_SHARDS);
  for (const queue of scheduler.queues) queue.on('error', (err) => logger.warn({ err: err.message }, 'queue connection error'));
  let registry: Registry;
  let mcp: McpManager;
  try {
    registry = createRegistry(app, { redis }, { faultInjection: config.REIN_FAULT_INJECTION === 'on' });
    mcp = new McpManager(app.mcpServers, registry.tools, { logger, metrics });
    if (opts.mcp) await mcp.start();
  } catch (err) {
    // A bad tools factory or an MCP server that cannot start: leave no connection behind.
    await scheduler.close();
    bull.disconnect();
    redis.disconnect();
    await tracing.shutdown();
    throw err;
  }
  const { tools, agents, inputFilter } = registry;
  const breakers = new CircuitBreakers(
    redis,
    {
      errorThresholdPercentage: config.REIN_BREAKER_ERROR_PERCENT,
      resetTimeoutMs: config.REIN_BREAKER_RESET_MS,
      volumeThreshold: config.REIN_BREAKER_VOLUME,
      rollingCountTimeoutMs: config.REIN_BREAKER_WINDOW_MS,
      probeTimeoutMs: config.REIN_MODEL_TIMEOUT_MS + 5_000,
    },
    logger,
    metrics,
  );
  const webhookStore = new WebhookStore(redis);
  const dispatcher = new WebhookDispatcher(bull, webhookStore, metrics, logger);
  dispatcher.queue.on('error', (err) => logger.warn({ err: err.message }, 'webhook queue connection error'));
  // Start with the queues' connections ready: one still handshaking when Redis drops rejects where nobody listens.
  await Promise.all([...scheduler.queues.map((q) => q.waitUntilReady()), dispatcher.queue.waitUntilReady()]);
  const store = new RunStore(redis, config.REIN_TRACE_TTL_DAYS * 86_400, metrics);
  const feed = new ApprovalFeed(redis, dispatcher.onFeedEvent);
  const ledger = new EffectLedger(redis);
  const journal = new DecisionJournal(redis);
  const quotas = new TenantQuotas(redis, config.REIN_TENANT_QUOTAS);
  const audit = new AuditLog(redis, logger);
  const enqueue = scheduler.enqueue;
  // The compensator commits through the applier whose finish hook it is: bound once both exist.
  let compensator: Compensator | undefined;
  const applier = createTransitionApplier({
    store,
    quotas,
    feed,
    enqueue,
    cancelExpiry: scheduler.cancelExpiry,
    metrics,
    knownTool: (name) => tools.has(name),
    audit,
    hooks: {
      async finished(run) {
        await dispatcher.onRunFinished(run);
        await compensator
          ?.onRunFinished(run)
          .catch((err: Error) => logger.error({ runId: run.id, err: err.message }, 'could not start the compensation of a run'));
      },
      decided: async (run) => compensator?.decided(run),
    },
  });
  const ceilings = {
    maxSteps: config.REIN_MAX_STEPS_CEILING,
    maxTokens: config.REIN_MAX_TOKENS_CEILING,
    timeoutMs: config.REIN_TIMEOUT_CEILING_MS,
  };
  const sessions = {
    windowTokens: config.REIN_SESSION_WINDOW_TOKENS,
    toolTraffic: config.REIN_SESSION_TOOL_TRAFFIC,
    model: config.REIN_MODEL,
  };
  compensator = createCompensator({
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
    toolTimeoutMs: config.REIN_TOOL_TIMEOUT_MS,
    approvalTtlMs: config.APPROVAL_TTL_MS,
    maxResultBytes: config.REIN_MAX_TOOL_RESULT_BYTES,
    breakers,
  });
  return {
    config,
    app,
    logger,
    metrics,
    redis,
    store,
    applier,
    feed,
    journal,
    ledger,
    scheduler,
    enqueue,
    tools,
    agents,
    quotas,
    runs: createRunService({ store, applier, journal, agents, enqueue, metrics, quotas, ceilings, sessions, masker, compensator }),
    approvals: createApprovalService({ store, applier, tools, escalation: config.REIN_APPROVAL_ESCALATION }),
    inputFilter,
    masker,
    breakers,
    fleetLimit: new FleetLimit(redis),
    mcp,
    tracing,
    webhooks: createWebhookService({ store: webhookStore, allowPrivate: config.REIN_WEBHOOK_ALLOW_PRIVATE, audit }),
    audit,
    decisionLog: createDecisionLog(audit),
    webhookStore,
    dispatcher,
    compensator,
    async close() {
      breakers.shutdown();
      await mcp.close();
      await scheduler.close();
      await dispatcher.close();
      bull.disconnect();
      redis.disconnect();
      await tracing.shutdown(); // flush the last spans
    },
  };
}
