import { AgentCatalog, type AgentProfile } from './agents/agent-profile.js';
import { orderAssistant } from './agents/order-assistant.js';
import { type ApprovalService, createApprovalService } from './approvals/approval-service.js';
import { TenantQuotas } from './budgets/tenant-quotas.js';
import type { Config } from './config.js';
import { DemoStore } from './demo/demo-store.js';
import { createDemoTools } from './demo/demo-tools.js';
import { PolicySearch } from './demo/policy-search.js';
import { createInputFilter, type InputFilter } from './guards/input-filter.js';
import { createPiiMasker, type PiiMasker } from './guards/pii-masker.js';
import { createLogger, type Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { type Enqueue, StepScheduler } from './queue/job-catalog.js';
import { bullConnection, checkRedisSettings, connectRedis, type RedisClient, type RedisRole } from './redis.js';
import { CircuitBreakers } from './resilience/circuit-breakers.js';
import { withFaultInjection } from './resilience/fault-injection.js';
import { FleetLimit } from './resilience/fleet-limit.js';
import { createRunService, type RunService } from './runs/run-service.js';
import { ApprovalFeed } from './store/approval-feed.js';
import { DecisionJournal } from './store/decision-journal.js';
import { EffectLedger } from './store/effect-ledger.js';
import { RunStore } from './store/run-store.js';
import type { Tool } from './tools/tool.js';

export interface Runtime {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  store: RunStore;
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
  close(): Promise<void>;
}

/** Wires the shared pieces of a Rein process from its config; services add their own edges. */
/** Additional tools and agent profiles (tests, or a deployment's own agents). */
export interface RuntimeExtensions {
  tools?: Tool[];
  agents?: AgentProfile[];
}

export async function createRuntime(
  config: Config,
  service: string,
  role: RedisRole,
  extensions: RuntimeExtensions = {},
): Promise<Runtime> {
  const masker = createPiiMasker();
  const logger = createLogger(config.LOG_LEVEL, service, masker);
  const metrics = createMetrics(service);
  const redis = await connectRedis(config, role, logger);
  await checkRedisSettings(redis, logger);
  const bull = bullConnection(config, role, logger);
  const scheduler = new StepScheduler(bull, config.REIN_STEP_ATTEMPTS, config.REIN_QUEUE_SHARDS);
  for (const queue of scheduler.queues) queue.on('error', (err) => logger.warn({ err: err.message }, 'queue connection error'));
  const allTools = [...createDemoTools({ store: new DemoStore(redis), policies: new PolicySearch() }), ...(extensions.tools ?? [])];
  const tools = new Map(allTools.map((t) => [t.name, config.REIN_FAULT_INJECTION === 'on' ? withFaultInjection(t, redis) : t]));
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
  const store = new RunStore(redis, config.REIN_TRACE_TTL_DAYS * 86_400);
  const feed = new ApprovalFeed(redis);
  const journal = new DecisionJournal(redis, config.REIN_TRACE_TTL_DAYS * 86_400);
  const quotas = new TenantQuotas(redis, config.REIN_TENANT_QUOTAS);
  const agents = new AgentCatalog([orderAssistant, ...(extensions.agents ?? [])], orderAssistant.name);
  const enqueue = scheduler.enqueue;
  const ceilings = {
    maxSteps: config.REIN_MAX_STEPS_CEILING,
    maxTokens: config.REIN_MAX_TOKENS_CEILING,
    timeoutMs: config.REIN_TIMEOUT_CEILING_MS,
  };
  return {
    config,
    logger,
    metrics,
    redis,
    store,
    feed,
    journal,
    ledger: new EffectLedger(redis),
    scheduler,
    enqueue,
    tools,
    agents,
    quotas,
    runs: createRunService({ store, journal, feed, agents, enqueue, metrics, quotas, ceilings }),
    approvals: createApprovalService({ store, enqueue, cancelExpiry: scheduler.cancelExpiry, metrics, tools, feed }),
    inputFilter: createInputFilter(),
    masker,
    breakers,
    fleetLimit: new FleetLimit(redis),
    async close() {
      breakers.shutdown();
      await scheduler.close();
      bull.disconnect();
      redis.disconnect();
    },
  };
}
