import { z } from 'zod';
import { type Config, configSchema, loadConfig, loadConfigOrExit, typedValueSchema } from './config.js';
import { ConfigError } from './errors.js';

/**
 * The typed, nested options of a Rein process: what components take, compiled once.
 * The environment is read only at the edge (`optionsFromEnv`); each field says which
 * variable sets it, and its default is that variable's default (config.ts holds the
 * parsing and the error messages).
 */
export interface ReinOptions {
  redis: {
    /** REDIS_URL. @default 'redis://127.0.0.1:6379' */
    url: Config['REDIS_URL'];
    /** REDIS_CLUSTER_NODES: set, every connection is a cluster client. @default undefined */
    clusterNodes: Config['REDIS_CLUSTER_NODES'];
    /** REDIS_USERNAME. @default undefined */
    username: Config['REDIS_USERNAME'];
    /** REDIS_PASSWORD. @default undefined */
    password: Config['REDIS_PASSWORD'];
    /** REDIS_TLS. @default 'off' */
    tls: Config['REDIS_TLS'];
  };
  queue: {
    /** REIN_QUEUE_SHARDS. @default 1 */
    shards: Config['REIN_QUEUE_SHARDS'];
    /** REIN_WORKER_SHARDS: shards this worker consumes. @default every shard */
    workerShards: Config['REIN_WORKER_SHARDS'];
    /** REIN_JOB_LOCK_MS. @default 30000 */
    jobLockMs: Config['REIN_JOB_LOCK_MS'];
    /** REIN_STEP_ATTEMPTS. @default 8 */
    stepAttempts: Config['REIN_STEP_ATTEMPTS'];
    /** WORKER_CONCURRENCY: step jobs one worker runs at once. @default 8 */
    workerConcurrency: Config['WORKER_CONCURRENCY'];
  };
  /** REIN_APP: the app module to load. @default '@rein/example-order-assistant' */
  app: Config['REIN_APP'];
  /** REIN_APP_VERSION: the version this process runs; overrides the app's own. @default the app's version, else its content hash */
  appVersion: Config['REIN_APP_VERSION'];
  model: {
    /** REIN_MODEL. @default 'rein-scripted' */
    name: Config['REIN_MODEL'];
    /** OPENAI_BASE_URL: the `openai` provider. @default 'http://127.0.0.1:8090/v1' */
    openaiBaseUrl: Config['OPENAI_BASE_URL'];
    /** OPENAI_API_KEY. @default 'not-needed-for-the-scripted-model' */
    openaiApiKey: Config['OPENAI_API_KEY'];
    /** REIN_FALLBACK_MODELS. @default [] */
    fallbacks: Config['REIN_FALLBACK_MODELS'];
    /** REIN_PROVIDERS (keys resolved from the environment). @default [] */
    providers: Config['REIN_PROVIDERS'];
    /** REIN_MODEL_TIMEOUT_MS. @default 30000 */
    timeoutMs: Config['REIN_MODEL_TIMEOUT_MS'];
    /** REIN_MODEL_IDLE_TIMEOUT_MS. @default 15000 */
    idleTimeoutMs: Config['REIN_MODEL_IDLE_TIMEOUT_MS'];
    /** REIN_MODEL_PRICES. @default built-in price table */
    prices: Config['REIN_MODEL_PRICES'];
    /** REIN_REQUIRE_PRICES. @default false */
    requirePrices: Config['REIN_REQUIRE_PRICES'];
    /** REIN_MODEL_PROCESS_CONCURRENCY. @default 16 */
    processConcurrency: Config['REIN_MODEL_PROCESS_CONCURRENCY'];
    /** REIN_MODEL_FLEET_CONCURRENCY. @default 64 */
    fleetConcurrency: Config['REIN_MODEL_FLEET_CONCURRENCY'];
  };
  tools: {
    /** REIN_TOOL_CONCURRENCY. @default 4 */
    concurrency: Config['REIN_TOOL_CONCURRENCY'];
    /** REIN_TOOL_TIMEOUT_MS. @default 15000 */
    timeoutMs: Config['REIN_TOOL_TIMEOUT_MS'];
    /** REIN_TOOL_PROCESS_CONCURRENCY. @default 16 */
    processConcurrency: Config['REIN_TOOL_PROCESS_CONCURRENCY'];
    /** REIN_TOOL_FAILURE_LIMIT. @default 3 */
    failureLimit: Config['REIN_TOOL_FAILURE_LIMIT'];
    /** REIN_TOOL_RESULT_MAX_CHARS. @default 2000 */
    resultMaxChars: Config['REIN_TOOL_RESULT_MAX_CHARS'];
    /** REIN_MAX_TOOL_RESULT_BYTES. @default DEFAULT_MAX_TOOL_RESULT_BYTES */
    maxResultBytes: Config['REIN_MAX_TOOL_RESULT_BYTES'];
  };
  limits: {
    /** REIN_MAX_STEPS_CEILING. @default 50 */
    maxStepsCeiling: Config['REIN_MAX_STEPS_CEILING'];
    /** REIN_MAX_TOKENS_CEILING. @default 1000000 */
    maxTokensCeiling: Config['REIN_MAX_TOKENS_CEILING'];
    /** REIN_TIMEOUT_CEILING_MS. @default 3600000 */
    timeoutCeilingMs: Config['REIN_TIMEOUT_CEILING_MS'];
    /** REIN_REPEAT_LIMIT. @default 2 */
    repeatLimit: Config['REIN_REPEAT_LIMIT'];
    /** REIN_MAX_AGENT_DEPTH: how deep a tree of sub-agent runs may grow. @default 3 */
    maxAgentDepth: Config['REIN_MAX_AGENT_DEPTH'];
    /** REIN_MAX_CHILDREN_PER_STEP: sub-agent runs one step may start. @default 4 */
    maxChildrenPerStep: Config['REIN_MAX_CHILDREN_PER_STEP'];
  };
  /** REIN_TENANT_QUOTAS. @default the built-in default quota */
  quotas: Config['REIN_TENANT_QUOTAS'];
  resilience: {
    /** REIN_BREAKER_ERROR_PERCENT. @default 50 */
    breakerErrorPercent: Config['REIN_BREAKER_ERROR_PERCENT'];
    /** REIN_BREAKER_RESET_MS. @default 10000 */
    breakerResetMs: Config['REIN_BREAKER_RESET_MS'];
    /** REIN_BREAKER_VOLUME. @default 5 */
    breakerVolume: Config['REIN_BREAKER_VOLUME'];
    /** REIN_BREAKER_WINDOW_MS. @default 10000 */
    breakerWindowMs: Config['REIN_BREAKER_WINDOW_MS'];
    /** REIN_BREAKER_FLEET_WORKERS: workers whose breakers must open before the fleet's does. @default 2 */
    breakerFleetWorkers: Config['REIN_BREAKER_FLEET_WORKERS'];
    /** REIN_BULKHEAD_WAIT_MS. @default 2000 */
    bulkheadWaitMs: Config['REIN_BULKHEAD_WAIT_MS'];
    /** REIN_FAULT_INJECTION. @default 'off' */
    faultInjection: Config['REIN_FAULT_INJECTION'];
  };
  maintenance: {
    /** REIN_REAPER_INTERVAL_MS. @default 15000 */
    reaperIntervalMs: Config['REIN_REAPER_INTERVAL_MS'];
    /** REIN_REAPER_STALE_MS. @default 30000 */
    reaperStaleMs: Config['REIN_REAPER_STALE_MS'];
    /** REIN_SWEEP_INTERVAL_MS. @default 5000 */
    sweepIntervalMs: Config['REIN_SWEEP_INTERVAL_MS'];
    /** REIN_AUDIT_CHECKPOINT_INTERVAL_MS: with the archive or a checkpoint sink on, how often decision-log heads are checkpointed. @default 60000 */
    auditCheckpointIntervalMs: Config['REIN_AUDIT_CHECKPOINT_INTERVAL_MS'];
  };
  store: {
    /** REIN_STORE_MAX_VALUE_BYTES. @default 65536 */
    maxValueBytes: Config['REIN_STORE_MAX_VALUE_BYTES'];
    /** REIN_STORE_MAX_ITEMS. @default 10000 */
    maxItems: Config['REIN_STORE_MAX_ITEMS'];
  };
  audit: {
    /** REIN_AUDIT_SIGNING_KEY. @default undefined (no receipts, unsigned checkpoints) */
    signingKey: Config['REIN_AUDIT_SIGNING_KEY'];
    /** REIN_AUDIT_RETIRED_KEYS. @default [] */
    retiredKeys: Config['REIN_AUDIT_RETIRED_KEYS'];
    /** REIN_AUDIT_CHECKPOINT_SINK. @default undefined (checkpoints go to the archive only) */
    checkpointSink: Config['REIN_AUDIT_CHECKPOINT_SINK'];
  };
  approvals: {
    /** APPROVAL_TTL_MS: how long a pending approval waits. @default 900000 */
    ttlMs: Config['APPROVAL_TTL_MS'];
    /** REIN_APPROVAL_SLA_MS: the decision time measured against (metrics, approval load). @default 600000 */
    slaMs: Config['REIN_APPROVAL_SLA_MS'];
    /** REIN_APPROVAL_ESCALATION: escalation by required role, for policies that name none. @default {} */
    escalation: Config['REIN_APPROVAL_ESCALATION'];
    /** REIN_LINK_SECRET: signs one-click links. @default derived from REIN_API_KEYS */
    linkSecret: Config['REIN_LINK_SECRET'];
    /** REIN_BUDGET_FOUR_EYES: someone other than the requester grants a budget raise. @default true */
    budgetFourEyes: Config['REIN_BUDGET_FOUR_EYES'];
  };
  retention: {
    /** REIN_TRACE_TTL_DAYS. @default 30 */
    traceTtlDays: Config['REIN_TRACE_TTL_DAYS'];
  };
  archive: {
    /** REIN_ARCHIVE_URL: the PostgreSQL archive of finished runs. @default undefined (no archive) */
    url: Config['REIN_ARCHIVE_URL'];
    /** REIN_HOT_RETENTION_MS: an archived run's keys stay in Redis this long after its finish. @default 3600000 */
    hotRetentionMs: Config['REIN_HOT_RETENTION_MS'];
    /** REIN_ARCHIVE_RETENTION_DAYS: archived runs older than this are deleted. @default undefined (kept) */
    retentionDays: Config['REIN_ARCHIVE_RETENTION_DAYS'];
  };
  http: {
    /** REIN_API_KEYS. @default undefined (required by services that authenticate) */
    apiKeys: Config['REIN_API_KEYS'];
    /** REIN_METRICS_TOKEN. @default undefined */
    metricsToken: Config['REIN_METRICS_TOKEN'];
    /** API_PORT. @default 8080 */
    apiPort: Config['API_PORT'];
    /** APPROVER_PORT. @default 8081 */
    approverPort: Config['APPROVER_PORT'];
    /** WORKER_METRICS_PORT. @default 9464 */
    workerMetricsPort: Config['WORKER_METRICS_PORT'];
    /** REIN_BIND_HOST. @default '0.0.0.0' */
    bindHost: Config['REIN_BIND_HOST'];
    /** REIN_CORS_ORIGINS: browser origins the API answers CORS for. @default [] (no CORS) */
    corsOrigins: Config['REIN_CORS_ORIGINS'];
    /** REIN_MAX_BODY_BYTES. */
    maxBodyBytes: Config['REIN_MAX_BODY_BYTES'];
    /** REIN_MAX_STREAMS_PER_TENANT. @default 200 */
    maxStreamsPerTenant: Config['REIN_MAX_STREAMS_PER_TENANT'];
    /** REIN_MAX_STREAMS_PER_USER. @default 20 */
    maxStreamsPerUser: Config['REIN_MAX_STREAMS_PER_USER'];
    /** REIN_HTTP_REQUEST_TIMEOUT_MS. @default 30000 */
    requestTimeoutMs: Config['REIN_HTTP_REQUEST_TIMEOUT_MS'];
    /** REIN_HTTP_IDLE_TIMEOUT_MS. @default 120000 */
    idleTimeoutMs: Config['REIN_HTTP_IDLE_TIMEOUT_MS'];
    /** REIN_HTTP_KEEP_ALIVE_TIMEOUT_MS. @default 72000 */
    keepAliveTimeoutMs: Config['REIN_HTTP_KEEP_ALIVE_TIMEOUT_MS'];
  };
  oidc: {
    /** REIN_OIDC_ISSUER. @default undefined (no company sign-in) */
    issuer: Config['REIN_OIDC_ISSUER'];
    /** REIN_OIDC_AUDIENCE. @default undefined (required with an issuer) */
    audience: Config['REIN_OIDC_AUDIENCE'];
    /** REIN_OIDC_TENANT_CLAIM. @default 'tenant' */
    tenantClaim: Config['REIN_OIDC_TENANT_CLAIM'];
    /** REIN_OIDC_USER_CLAIM. @default 'sub' */
    userClaim: Config['REIN_OIDC_USER_CLAIM'];
    /** REIN_OIDC_ROLES_CLAIM. @default 'roles' */
    rolesClaim: Config['REIN_OIDC_ROLES_CLAIM'];
    /** REIN_OIDC_ROLE_MAP. @default {} */
    roleMap: Config['REIN_OIDC_ROLE_MAP'];
    /** REIN_OIDC_CLOCK_TOLERANCE_S. @default 30 */
    clockToleranceSec: Config['REIN_OIDC_CLOCK_TOLERANCE_S'];
    /** REIN_OIDC_JWKS_COOLDOWN_MS. @default 30000 */
    jwksCooldownMs: Config['REIN_OIDC_JWKS_COOLDOWN_MS'];
    /** REIN_OIDC_OWNER_STANDING_MS. @default 2592000000 (30 days) */
    ownerStandingMs: Config['REIN_OIDC_OWNER_STANDING_MS'];
    /** REIN_OIDC_CONSOLE_CLIENT_ID. @default undefined (the console signs in with keys) */
    consoleClientId: Config['REIN_OIDC_CONSOLE_CLIENT_ID'];
    /** REIN_OIDC_CONSOLE_SCOPES. @default 'openid profile' */
    consoleScopes: Config['REIN_OIDC_CONSOLE_SCOPES'];
    /** REIN_OIDC_CONSOLE_TOKEN. @default 'access' */
    consoleToken: Config['REIN_OIDC_CONSOLE_TOKEN'];
  };
  remoteAgents: {
    /** REIN_REMOTE_AGENT_ALLOW_PRIVATE: remote A2A agents on private addresses (an in-cluster agent) may be called. @default false */
    allowPrivate: Config['REIN_REMOTE_AGENT_ALLOW_PRIVATE'];
  };
  webhooks: {
    /** REIN_WEBHOOK_ALLOW_PRIVATE. @default false */
    allowPrivate: Config['REIN_WEBHOOK_ALLOW_PRIVATE'];
    /** REIN_WEBHOOK_TIMEOUT_MS. @default 10000 */
    timeoutMs: Config['REIN_WEBHOOK_TIMEOUT_MS'];
    /** REIN_WEBHOOK_RETRY_BASE_MS. @default 5000 */
    retryBaseMs: Config['REIN_WEBHOOK_RETRY_BASE_MS'];
    /** REIN_CONSOLE_URL: the approver console's public base URL, for approvals' `consoleUrl` in webhooks. @default undefined (none) */
    consoleUrl: Config['REIN_CONSOLE_URL'];
  };
  sessions: {
    /** REIN_SESSION_WINDOW_TOKENS. @default 8000 */
    windowTokens: Config['REIN_SESSION_WINDOW_TOKENS'];
    /** REIN_SESSION_TOOL_TRAFFIC. @default false */
    toolTraffic: Config['REIN_SESSION_TOOL_TRAFFIC'];
  };
  schedules: {
    /** REIN_SCHEDULES_PER_TENANT. @default 100 */
    perTenant: Config['REIN_SCHEDULES_PER_TENANT'];
  };
  replays: {
    /** REIN_REPLAY_COHORTS_PER_TENANT. @default 2 */
    cohortsPerTenant: Config['REIN_REPLAY_COHORTS_PER_TENANT'];
  };
  /** LOG_LEVEL. @default 'info' */
  logLevel: Config['LOG_LEVEL'];
  tracing: {
    /** OTEL_SDK_DISABLED. @default 'false' */
    sdkDisabled: Config['OTEL_SDK_DISABLED'];
    /** OTEL_EXPORTER_OTLP_ENDPOINT. @default undefined (no SDK registered) */
    endpoint: Config['OTEL_EXPORTER_OTLP_ENDPOINT'];
    /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. @default undefined */
    tracesEndpoint: Config['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'];
    /** OTEL_EXPORTER_OTLP_PROTOCOL. @default 'http/protobuf' */
    protocol: Config['OTEL_EXPORTER_OTLP_PROTOCOL'];
    /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL. @default undefined */
    tracesProtocol: Config['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'];
    /** OTEL_SERVICE_NAME. @default the service's own name */
    serviceName: Config['OTEL_SERVICE_NAME'];
    /** OTEL_TRACES_SAMPLER. @default 'parentbased_always_on' */
    sampler: Config['OTEL_TRACES_SAMPLER'];
    /** OTEL_TRACES_SAMPLER_ARG. @default 1 */
    samplerArg: Config['OTEL_TRACES_SAMPLER_ARG'];
    /** OTEL_BSP_SCHEDULE_DELAY. @default 5000 */
    scheduleDelayMs: Config['OTEL_BSP_SCHEDULE_DELAY'];
    /** OTEL_BSP_EXPORT_TIMEOUT. @default 30000 */
    exportTimeoutMs: Config['OTEL_BSP_EXPORT_TIMEOUT'];
    /** OTEL_BSP_MAX_QUEUE_SIZE. @default 2048 */
    maxQueueSize: Config['OTEL_BSP_MAX_QUEUE_SIZE'];
    /** OTEL_BSP_MAX_EXPORT_BATCH_SIZE. @default 512 */
    maxExportBatchSize: Config['OTEL_BSP_MAX_EXPORT_BATCH_SIZE'];
    /** REIN_OTEL_CAPTURE_CONTENT. @default 'false' */
    captureContent: Config['REIN_OTEL_CAPTURE_CONTENT'];
    /** REIN_TRACE_URL_TEMPLATE: the console links a run to `{traceId}` in it. @default undefined (no link) */
    urlTemplate: Config['REIN_TRACE_URL_TEMPLATE'];
  };
}

/** Partial options for embedding: any nested field may be left out and takes its default. */
export type PartialReinOptions = {
  [K in keyof ReinOptions]?: ReinOptions[K] extends readonly unknown[] | undefined
    ? ReinOptions[K]
    : ReinOptions[K] extends object
      ? Partial<ReinOptions[K]>
      : ReinOptions[K];
};

/**
 * Where each variable lands: `section.field` (or a top-level field). Typed over every
 * key of configSchema, so a new variable cannot be left unmapped.
 */
export const envOptionPaths = {
  REDIS_URL: 'redis.url',
  REDIS_CLUSTER_NODES: 'redis.clusterNodes',
  REDIS_USERNAME: 'redis.username',
  REDIS_PASSWORD: 'redis.password',
  REDIS_TLS: 'redis.tls',
  REIN_QUEUE_SHARDS: 'queue.shards',
  REIN_WORKER_SHARDS: 'queue.workerShards',
  REIN_JOB_LOCK_MS: 'queue.jobLockMs',
  REIN_STEP_ATTEMPTS: 'queue.stepAttempts',
  WORKER_CONCURRENCY: 'queue.workerConcurrency',
  OPENAI_BASE_URL: 'model.openaiBaseUrl',
  OPENAI_API_KEY: 'model.openaiApiKey',
  API_PORT: 'http.apiPort',
  APPROVER_PORT: 'http.approverPort',
  WORKER_METRICS_PORT: 'http.workerMetricsPort',
  APPROVAL_TTL_MS: 'approvals.ttlMs',
  REIN_APPROVAL_SLA_MS: 'approvals.slaMs',
  REIN_APPROVAL_ESCALATION: 'approvals.escalation',
  REIN_LINK_SECRET: 'approvals.linkSecret',
  REIN_BUDGET_FOUR_EYES: 'approvals.budgetFourEyes',
  REIN_APP: 'app',
  REIN_APP_VERSION: 'appVersion',
  REIN_MODEL: 'model.name',
  REIN_FALLBACK_MODELS: 'model.fallbacks',
  REIN_PROVIDERS: 'model.providers',
  REIN_MODEL_TIMEOUT_MS: 'model.timeoutMs',
  REIN_MODEL_IDLE_TIMEOUT_MS: 'model.idleTimeoutMs',
  REIN_MODEL_PRICES: 'model.prices',
  REIN_REQUIRE_PRICES: 'model.requirePrices',
  REIN_MODEL_PROCESS_CONCURRENCY: 'model.processConcurrency',
  REIN_MODEL_FLEET_CONCURRENCY: 'model.fleetConcurrency',
  REIN_TOOL_CONCURRENCY: 'tools.concurrency',
  REIN_TOOL_TIMEOUT_MS: 'tools.timeoutMs',
  REIN_TOOL_PROCESS_CONCURRENCY: 'tools.processConcurrency',
  REIN_TOOL_FAILURE_LIMIT: 'tools.failureLimit',
  REIN_TOOL_RESULT_MAX_CHARS: 'tools.resultMaxChars',
  REIN_MAX_TOOL_RESULT_BYTES: 'tools.maxResultBytes',
  REIN_MAX_STEPS_CEILING: 'limits.maxStepsCeiling',
  REIN_MAX_TOKENS_CEILING: 'limits.maxTokensCeiling',
  REIN_TIMEOUT_CEILING_MS: 'limits.timeoutCeilingMs',
  REIN_REPEAT_LIMIT: 'limits.repeatLimit',
  REIN_MAX_AGENT_DEPTH: 'limits.maxAgentDepth',
  REIN_MAX_CHILDREN_PER_STEP: 'limits.maxChildrenPerStep',
  REIN_TENANT_QUOTAS: 'quotas',
  REIN_BREAKER_ERROR_PERCENT: 'resilience.breakerErrorPercent',
  REIN_BREAKER_RESET_MS: 'resilience.breakerResetMs',
  REIN_BREAKER_VOLUME: 'resilience.breakerVolume',
  REIN_BREAKER_WINDOW_MS: 'resilience.breakerWindowMs',
  REIN_BREAKER_FLEET_WORKERS: 'resilience.breakerFleetWorkers',
  REIN_BULKHEAD_WAIT_MS: 'resilience.bulkheadWaitMs',
  REIN_FAULT_INJECTION: 'resilience.faultInjection',
  REIN_REAPER_INTERVAL_MS: 'maintenance.reaperIntervalMs',
  REIN_REAPER_STALE_MS: 'maintenance.reaperStaleMs',
  REIN_SWEEP_INTERVAL_MS: 'maintenance.sweepIntervalMs',
  REIN_AUDIT_CHECKPOINT_INTERVAL_MS: 'maintenance.auditCheckpointIntervalMs',
  REIN_STORE_MAX_VALUE_BYTES: 'store.maxValueBytes',
  REIN_STORE_MAX_ITEMS: 'store.maxItems',
  REIN_AUDIT_SIGNING_KEY: 'audit.signingKey',
  REIN_AUDIT_RETIRED_KEYS: 'audit.retiredKeys',
  REIN_AUDIT_CHECKPOINT_SINK: 'audit.checkpointSink',
  REIN_TRACE_TTL_DAYS: 'retention.traceTtlDays',
  REIN_ARCHIVE_URL: 'archive.url',
  REIN_HOT_RETENTION_MS: 'archive.hotRetentionMs',
  REIN_ARCHIVE_RETENTION_DAYS: 'archive.retentionDays',
  REIN_API_KEYS: 'http.apiKeys',
  REIN_OIDC_ISSUER: 'oidc.issuer',
  REIN_OIDC_AUDIENCE: 'oidc.audience',
  REIN_OIDC_TENANT_CLAIM: 'oidc.tenantClaim',
  REIN_OIDC_USER_CLAIM: 'oidc.userClaim',
  REIN_OIDC_ROLES_CLAIM: 'oidc.rolesClaim',
  REIN_OIDC_ROLE_MAP: 'oidc.roleMap',
  REIN_OIDC_CLOCK_TOLERANCE_S: 'oidc.clockToleranceSec',
  REIN_OIDC_JWKS_COOLDOWN_MS: 'oidc.jwksCooldownMs',
  REIN_OIDC_OWNER_STANDING_MS: 'oidc.ownerStandingMs',
  REIN_OIDC_CONSOLE_CLIENT_ID: 'oidc.consoleClientId',
  REIN_OIDC_CONSOLE_SCOPES: 'oidc.consoleScopes',
  REIN_OIDC_CONSOLE_TOKEN: 'oidc.consoleToken',
  REIN_METRICS_TOKEN: 'http.metricsToken',
  REIN_BIND_HOST: 'http.bindHost',
  REIN_CORS_ORIGINS: 'http.corsOrigins',
  REIN_MAX_BODY_BYTES: 'http.maxBodyBytes',
  REIN_MAX_STREAMS_PER_TENANT: 'http.maxStreamsPerTenant',
  REIN_MAX_STREAMS_PER_USER: 'http.maxStreamsPerUser',
  REIN_HTTP_REQUEST_TIMEOUT_MS: 'http.requestTimeoutMs',
  REIN_HTTP_IDLE_TIMEOUT_MS: 'http.idleTimeoutMs',
  REIN_HTTP_KEEP_ALIVE_TIMEOUT_MS: 'http.keepAliveTimeoutMs',
  REIN_WEBHOOK_ALLOW_PRIVATE: 'webhooks.allowPrivate',
  REIN_REMOTE_AGENT_ALLOW_PRIVATE: 'remoteAgents.allowPrivate',
  REIN_WEBHOOK_TIMEOUT_MS: 'webhooks.timeoutMs',
  REIN_WEBHOOK_RETRY_BASE_MS: 'webhooks.retryBaseMs',
  REIN_CONSOLE_URL: 'webhooks.consoleUrl',
  REIN_SESSION_WINDOW_TOKENS: 'sessions.windowTokens',
  REIN_SESSION_TOOL_TRAFFIC: 'sessions.toolTraffic',
  REIN_SCHEDULES_PER_TENANT: 'schedules.perTenant',
  REIN_REPLAY_COHORTS_PER_TENANT: 'replays.cohortsPerTenant',
  LOG_LEVEL: 'logLevel',
  OTEL_SDK_DISABLED: 'tracing.sdkDisabled',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'tracing.endpoint',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'tracing.tracesEndpoint',
  OTEL_EXPORTER_OTLP_PROTOCOL: 'tracing.protocol',
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'tracing.tracesProtocol',
  OTEL_SERVICE_NAME: 'tracing.serviceName',
  OTEL_TRACES_SAMPLER: 'tracing.sampler',
  OTEL_TRACES_SAMPLER_ARG: 'tracing.samplerArg',
  OTEL_BSP_SCHEDULE_DELAY: 'tracing.scheduleDelayMs',
  OTEL_BSP_EXPORT_TIMEOUT: 'tracing.exportTimeoutMs',
  OTEL_BSP_MAX_QUEUE_SIZE: 'tracing.maxQueueSize',
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'tracing.maxExportBatchSize',
  REIN_OTEL_CAPTURE_CONTENT: 'tracing.captureContent',
  REIN_TRACE_URL_TEMPLATE: 'tracing.urlTemplate',
} as const satisfies Record<keyof Config, string>;

/** Maps a parsed environment onto options, following envOptionPaths. */
export function optionsFromConfig(config: Config): ReinOptions {
  const out: Record<string, unknown> = {};
  for (const [name, path] of Object.entries(envOptionPaths)) {
    const [section, field] = path.split('.') as [string, string | undefined];
    const value = config[name as keyof Config];
    if (field === undefined) out[section] = value;
    else out[section] = { ...(out[section] as object | undefined), [field]: value };
  }
  return out as unknown as ReinOptions;
}

/** The variable behind each option path (`queue.shards` → REIN_QUEUE_SHARDS), for errors an operator can act on. */
const envNameOf = new Map<string, string>(Object.entries(envOptionPaths).map(([name, path]) => [path, name]));

/**
 * What no single field can say: rules across fields, checked on the merged options.
 * A checkpoint sink writes signed checkpoints, so it needs the audit key.
 */
function crossFieldRules(o: ReinOptions, ctx: z.RefinementCtx): void {
  if (o.audit.checkpointSink && !o.audit.signingKey)
    ctx.addIssue({ code: 'custom', path: ['audit', 'checkpointSink'], message: 'needs audit.signingKey (checkpoints are signed)' });
}

/** Compiled options as one zod schema: each field checked by its variable's schema (config.ts), sections strict, then the cross-field rules. */
const reinOptionsSchema = (() => {
  const sections: Record<string, Record<string, z.ZodType>> = {};
  const top: Record<string, z.ZodType> = {};
  for (const [name, path] of Object.entries(envOptionPaths)) {
    const [section, field] = path.split('.') as [string, string | undefined];
    const schema = typedValueSchema(name as keyof Config);
    if (field === undefined) top[section] = schema;
    else sections[section] = { ...sections[section], [field]: schema };
  }
  const shape = { ...top, ...Object.fromEntries(Object.entries(sections).map(([k, fields]) => [k, z.strictObject(fields)])) };
  return z.strictObject(shape).superRefine((o, ctx) => crossFieldRules(o as unknown as ReinOptions, ctx));
})();

/**
 * The one way options are made: a parsed environment (`config`; default: no variable set)
 * mapped onto options, under the embedder's partial options, section by section; the
 * merged whole is validated (every field, unknown names, the cross-field rules) and
 * returned typed. A bad value is a ConfigError naming its option and its variable.
 */
export function compileOptions(partial: PartialReinOptions = {}, config: Config = configSchema.parse({})): ReinOptions {
  const base = optionsFromConfig(config) as unknown as Record<string, unknown>;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(partial)) {
    if (value === undefined) continue;
    const section = base[key];
    const isSection = section !== null && typeof section === 'object' && !Array.isArray(section) && key !== 'quotas';
    merged[key] = isSection ? { ...(section as object), ...(value as object) } : value;
  }
  const parsed = reinOptionsSchema.safeParse(merged);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const path = i.path.join('.');
      const name = envNameOf.get(i.path.slice(0, 2).join('.')) ?? envNameOf.get(String(i.path[0]));
      return `  ${path}${name ? ` (${name})` : ''}: ${i.message}`;
    });
    throw new ConfigError(`invalid options:\n${lines.join('\n')}`);
  }
  return parsed.data as unknown as ReinOptions;
}

/** Parses the environment (config.ts's errors) and compiles it: the only place options meet env names. */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): ReinOptions {
  return compileOptions({}, loadConfig(env));
}

/** For process entry points: the environment's options, or print what is wrong with them and exit 1. */
export function loadOptionsOrExit(env: NodeJS.ProcessEnv = process.env): ReinOptions {
  const config = loadConfigOrExit(env);
  try {
    return compileOptions({}, config);
  } catch (err) {
    process.stderr.write(`rein: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
