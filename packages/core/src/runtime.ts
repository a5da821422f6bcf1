import type { Redis } from 'ioredis';
import { AgentCatalog } from './agents/agent-profile.js';
import { orderAssistant } from './agents/order-assistant.js';
import type { Config } from './config.js';
import { DemoStore } from './demo/demo-store.js';
import { createDemoTools } from './demo/demo-tools.js';
import { PolicySearch } from './demo/policy-search.js';
import { createLogger, type Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { type Enqueue, StepScheduler } from './queue/job-catalog.js';
import { bullConnection, connectRedis, type RedisRole } from './redis.js';
import { ApprovalFeed } from './store/approval-feed.js';
import { DecisionJournal } from './store/decision-journal.js';
import { EffectLedger } from './store/effect-ledger.js';
import { RunStore } from './store/run-store.js';
import type { Tool } from './tools/tool.js';

export interface Runtime {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  redis: Redis;
  store: RunStore;
  feed: ApprovalFeed;
  journal: DecisionJournal;
  ledger: EffectLedger;
  scheduler: StepScheduler;
  enqueue: Enqueue;
  tools: Map<string, Tool>;
  agents: AgentCatalog;
  close(): Promise<void>;
}

/** Wires the shared pieces of a Rein process from its config; services add their own edges. */
export async function createRuntime(config: Config, service: string, role: RedisRole): Promise<Runtime> {
  const logger = createLogger(config.LOG_LEVEL, service);
  const metrics = createMetrics(service);
  const redis = await connectRedis(config.REDIS_URL, role, logger);
  const bull = bullConnection(config.REDIS_URL, role, logger);
  const scheduler = new StepScheduler(bull, config.REIN_STEP_ATTEMPTS);
  scheduler.queue.on('error', (err) => logger.warn({ err: err.message }, 'queue connection error'));
  const tools = new Map(createDemoTools({ store: new DemoStore(redis), policies: new PolicySearch() }).map((t) => [t.name, t]));
  return {
    config,
    logger,
    metrics,
    redis,
    store: new RunStore(redis, config.REIN_TRACE_TTL_DAYS * 86_400),
    feed: new ApprovalFeed(redis),
    journal: new DecisionJournal(redis),
    ledger: new EffectLedger(redis),
    scheduler,
    enqueue: scheduler.enqueue,
    tools,
    agents: new AgentCatalog([orderAssistant], orderAssistant.name),
    async close() {
      await scheduler.close();
      bull.disconnect();
      redis.disconnect();
    },
  };
}
