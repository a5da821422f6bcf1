import type { Principal } from '@rein/contract';
import type { AgentProfile, Tool } from '@rein/define/internal';
import { type AppServices, defineApp } from '@rein/define/internal';
import orderApp, { DemoStore, orderAssistant } from '@rein/example-order-assistant';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { ModelGateway } from '../src/adapters/model/model-gateway.js';
import type { RunArchive } from '../src/adapters/postgres/run-archive.js';
import {
  type Enqueue,
  type ExpireJob,
  type JobName,
  type JobPayload,
  jobCatalog,
  stepJobSchema,
} from '../src/adapters/queue/job-catalog.js';
import { ApprovalFeed } from '../src/adapters/redis/approval-feed.js';
import { AuditLog } from '../src/adapters/redis/audit-log.js';
import { DecisionJournal } from '../src/adapters/redis/decision-journal.js';
import { RedisEffectLedger } from '../src/adapters/redis/effect-ledger.js';
import { RedisIdempotencyKeys } from '../src/adapters/redis/idempotency-keys.js';
import { createRedisClient, redisOptions } from '../src/adapters/redis/redis.js';
import { RedisItemStore } from '../src/adapters/redis/redis-item-store.js';
import { RunStore } from '../src/adapters/redis/run-store.js';
import { RedisSessions } from '../src/adapters/redis/session-store.js';
import { TenantQuotas } from '../src/adapters/redis/tenant-quotas.js';
import { createApprovalService } from '../src/features/approvals/approval-service.js';
import { createRunService } from '../src/features/runs/run-service.js';
import type { SessionSettings } from '../src/features/runs/session-history.js';
import { createStoreService } from '../src/features/store/store-service.js';
import { createRunTree, treePlug } from '../src/features/tree/run-tree.js';
import type { EscalationDefaults } from '../src/policy/approvals/escalation.js';
import type { DelegationLimits } from '../src/policy/step/call-plan.js';
import { deciderLabels, knownToolNames } from '../src/policy/step/commit-facts.js';
import { createRegistry } from '../src/process/registry.js';
import { createRunEndHooks } from '../src/process/run-end-hooks.js';
import { loadConfig, type Price, type Quotas } from '../src/shared/config.js';
import { createPiiMasker } from '../src/shared/guards/pii-masker.js';
import { createMetrics } from '../src/shared/metrics.js';
import { compileOptions } from '../src/shared/options.js';
import { createTransitionApplier, type FinishHooks } from '../src/step/apply-transition.js';
import { createChildRuns } from '../src/step/child-runs.js';
import { createStepEngine } from '../src/step/step-engine.js';
import type { StepVersions } from '../src/step/step-processor.js';
import { startTestRedis, type TestRedis } from '../src/testing/index.js';

/** How many times a Redis server has read a client's request: one per write that reached it apart. */
export async function readsProcessed(admin: Redis): Promise<number> {
  return Number(/^total_reads_processed:(\d+)/m.exec(await admin.info('stats'))?.[1]);
}

export const USER: Principal = { tenantId: 'acme', userId: 'alice', roles: ['user'] };
export const APPROVER: Principal = { tenantId: 'acme', userId: 'bob', roles: ['approver'] };

/**
 * The step engine wired to a real Redis, with an in-memory queue the test drains
 * explicitly — so a test can replay, duplicate or interleave steps at will. Its app
 * is the order-assistant example (plus `extraTools`), built by `createRegistry` as
 * in the services.
 */
export interface HarnessOptions {
  extraTools?: Tool[];
  profile?: Partial<AgentProfile>;
  approvalTtlMs?: number;
  /** REIN_BUDGET_FOUR_EYES (default on): a budget raise needs someone other than its requester. */
  budgetFourEyes?: boolean;
  /** The app-wide escalation by role (REIN_APPROVAL_ESCALATION). */
  escalation?: EscalationDefaults;
  quotas?: Quotas;
  prices?: Record<string, Price>;
  /** The clock of the engine and approval service; tests advance it instead of sleeping. */
  now?: () => number;
  sessions?: Partial<SessionSettings>;
  /** The applier's finish hook (the runtime's is webhooks and compensation); the run tree's hook runs after it. */
  onFinished?: FinishHooks['finished'];
  /** The applier's change hook (the runtime's is A2A push notifications): a commit changed a live run's status or approvals. */
  onChanged?: FinishHooks['changed'];
  /** More agents beside the default one (sub-agents, hand-off targets). */
  agents?: AgentProfile[];
  delegation?: DelegationLimits;
  /** The fleet's app versions as this process sees them (its own, promotions, upgrades); new runs are pinned to `own`. */
  versions?: StepVersions;
  /** The run archive the run service reads what Redis no longer holds from. */
  archive?: RunArchive;
  /** The static keys' users, whose decisions are counted under their own user id (else as `company`). */
  deciders?: Array<{ tenantId: string; userId: string }>;
  /** A worker's connection (what one turn sends leaves in one write), for tests that count round trips. */
  workerConnection?: boolean;
}

export function createHarness(url: string, model: ModelGateway, opts: HarnessOptions = {}) {
  const redis = opts.workerConnection
    ? (createRedisClient({ url, tls: 'off' }, redisOptions('worker')) as Redis)
    : new Redis(url, { maxRetriesPerRequest: null });
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics('test');
  const store = new RunStore(redis, 3600, metrics);
  const sessionRegistry = new RedisSessions(redis, 3600, store);
  const journal = new DecisionJournal(redis);
  const ledger = new RedisEffectLedger(redis);
  const demo = new DemoStore(redis);
  const profile: AgentProfile = {
    ...orderAssistant,
    ...opts.profile,
    tools: [...orderAssistant.tools, ...(opts.extraTools ?? []).map((t) => t.name), ...(opts.profile?.tools ?? [])],
  };
  const baseTools = orderApp.tools as (s: AppServices) => Tool[];
  const app = defineApp({
    agents: [profile, ...(opts.agents ?? [])],
    tools: (services) => [...baseTools(services), ...(opts.extraTools ?? [])],
    guards: orderApp.guards,
    handoffAnswer: orderApp.handoffAnswer,
  });
  // The store agents' memory writes to, as the services build it without an archive.
  const itemStore = createStoreService({ items: new RedisItemStore(redis), maxValueBytes: 65_536, maxItems: 10_000 });
  const { tools, agents, inputFilter } = createRegistry(app, { redis }, { memory: itemStore });
  const masker = createPiiMasker(app.guards.pii);
  const queue: Array<{ name: JobName; job: JobPayload<JobName>; delayMs?: number }> = [];
  const enqueue: Enqueue = async (name, job, opts) => {
    const id = (jobCatalog[name].id as (j: typeof job) => string)(job);
    if (!queue.some((q) => (jobCatalog[q.name].id as (j: typeof q.job) => string)(q.job) === id)) {
      queue.push({ name, job, ...(opts?.delayMs !== undefined ? { delayMs: opts.delayMs } : {}) });
    }
  };
  const cancelExpiry = async (job: ExpireJob) => {
    const id = jobCatalog.expire.id(job);
    const at = queue.findIndex((q) => q.name === 'expire' && jobCatalog.expire.id(q.job as ExpireJob) === id);
    if (at >= 0) queue.splice(at, 1);
  };
  const feed = new ApprovalFeed(redis);
  const audit = new AuditLog(redis, logger, opts.now);
  const clock = opts.now ? { now: opts.now } : {};
  const quotas = new TenantQuotas(redis, opts.quotas ?? loadConfig({}).REIN_TENANT_QUOTAS, opts.now);
  const runEnd = createRunEndHooks();
  const applier = createTransitionApplier({
    store,
    quotas,
    feed,
    enqueue,
    cancelExpiry,
    metrics,
    knownTool: knownToolNames(tools, agents),
    approvalLoad: { slaMs: 600_000, decider: deciderLabels(opts.deciders ?? []) },
    audit,
    hooks: runEnd,
    ...clock,
  });
  const tree = createRunTree({ store, applier, enqueue, logger, ...clock });
  // As the runtime plugs its features in; a test's own hook runs first, where webhooks and compensation would.
  runEnd.plug([
    ...(opts.onFinished || opts.onChanged
      ? [
          {
            feature: 'test',
            ...(opts.onFinished ? { finished: opts.onFinished } : {}),
            ...(opts.onChanged ? { changed: opts.onChanged } : {}),
          },
        ]
      : []),
    treePlug(tree),
  ]);
  // The engine as the workers assemble it, over options that differ from the defaults where the tests need it.
  const options = compileOptions({
    model: { name: 'fake-model', timeoutMs: 5000, prices: opts.prices ?? {} },
    tools: { timeoutMs: 2000 },
    approvals: {
      ttlMs: opts.approvalTtlMs ?? 60_000,
      budgetFourEyes: opts.budgetFourEyes ?? true,
      ...(opts.escalation ? { escalation: opts.escalation } : {}),
    },
  });
  // A test may set limits no operator could (a depth of 0): they go to the engine as given.
  const delegation = opts.delegation ?? { maxDepth: options.limits.maxAgentDepth, maxChildrenPerStep: options.limits.maxChildrenPerStep };
  const { steps } = createStepEngine(
    {
      options,
      store,
      applier,
      feed,
      journal,
      ledger,
      enqueue,
      tools,
      agents,
      quotas,
      inputFilter,
      masker,
      metrics,
      logger,
      delegation,
      spawnChild: createChildRuns({ store, ledger, agents, enqueue, ...clock }),
    },
    { model, ...clock, ...(opts.versions ? { versions: opts.versions } : {}) },
  );
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
    ceilings: { maxSteps: 50, maxTokens: 1_000_000, timeoutMs: 3_600_000 },
    sessions: { windowTokens: 8000, toolTraffic: false, model: 'fake-model', ...opts.sessions },
    masker,
    ...(opts.versions ? { currentVersion: () => (opts.versions as StepVersions).own } : {}),
    ...(opts.archive ? { archive: opts.archive } : {}),
    ...clock,
  });
  const approvals = createApprovalService({
    store,
    applier,
    tools,
    slaMs: 600_000,
    ...clock,
    ...(opts.escalation ? { escalation: opts.escalation } : {}),
  });

  return {
    redis,
    feed,
    audit,
    quotas,
    store,
    sessionRegistry,
    applier,
    journal,
    ledger,
    demo,
    itemStore,
    metrics,
    logger,
    queue,
    enqueue,
    tools,
    agents,
    steps,
    runs,
    approvals,
    /** Processes queued jobs until none are left (or `max` were run). */
    async drain(max = 50) {
      let ran = 0;
      // Expiry and escalation jobs are delayed by design, and compensations and admissions are not steps: they stay queued, and tests run them explicitly.
      const held: JobName[] = ['expire', 'escalate', 'compensate', 'admit'];
      const runnable = () => queue.find((q) => !held.includes(q.name));
      for (let next = runnable(); next && ran < max; next = runnable()) {
        queue.splice(queue.indexOf(next), 1);
        await steps.process(stepJobSchema.parse(next.job));
        ran++;
      }
      return ran;
    },
    async submit(input: string, principal: Principal = USER, limits?: { maxSteps?: number; maxTokens?: number; timeoutMs?: number }) {
      const { run } = await runs.submit(principal, { input, ...(limits ? { limits } : {}) });
      return run.id;
    },
    async close() {
      redis.disconnect();
    },
  };
}
export type Harness = ReturnType<typeof createHarness>;

/**
 * One Redis per test file, a fresh harness per test: registers the hooks and returns
 * `harness(model, opts)`, which builds the test's harness over that Redis.
 */
export function harnessPerTest() {
  let redis: TestRedis;
  let current: Harness | undefined;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await current?.close();
    await redis.stop();
  });
  beforeEach(async () => {
    await current?.redis.flushdb();
    await current?.close();
    current = undefined;
  });
  return (model: ModelGateway, opts?: HarnessOptions): Harness => {
    current = createHarness(redis.url, model, opts);
    return current;
  };
}
