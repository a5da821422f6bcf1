import { apiKeySchema, appVersionSchema, escalationSchema, roleSchema, tenantRoleSchema } from '@rein/contract';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { priceSchema } from './price.js';
import { providersSchema, resolvedProvidersSchema, resolveProviderKeys } from './provider-config.js';

/** REIN_MAX_TOOL_RESULT_BYTES by default: the most of one tool result Rein keeps anywhere. */
export const DEFAULT_MAX_TOOL_RESULT_BYTES = 256 * 1024;

const csv = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);

const apiKeyList = z.array(apiKeySchema);
const apiKeys = z.string().transform((raw, ctx) => {
  try {
    return apiKeyList.parse(JSON.parse(raw));
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `must be a JSON array of {key, tenantId, userId, roles}: ${(err as Error).message}` });
    return z.NEVER;
  }
});

/** Whether `entry` is exactly `scheme://host[:port]`, as a browser sends it in `Origin`. */
function isOrigin(entry: string): boolean {
  let origin: string | undefined;
  try {
    const url = new URL(entry);
    origin = /^https?:$/.test(url.protocol) ? url.origin : undefined;
  } catch {}
  // URL takes `*` as a host character: a wildcard would then match nothing, silently.
  return origin === entry && !entry.includes('*');
}
const notOrigin = (entry: string) => `"${entry}" is not an origin: http(s)://host[:port], no path or trailing slash, no wildcard`;

/** Browser origins, each exactly `scheme://host[:port]` as a browser sends it in `Origin`. */
const origins = csv.transform((list, ctx) =>
  list.filter((entry) => {
    if (isOrigin(entry)) return true;
    ctx.addIssue({ code: 'custom', message: notOrigin(entry) });
    return false;
  }),
);

/** `true` / `false` exactly (z.coerce.boolean would read "false" as true). */
const flag = z.enum(['true', 'false']).transform((v) => v === 'true');

const jsonOf = <T extends z.ZodType>(schema: T, shape: string) =>
  z.string().transform((raw, ctx): z.infer<T> => {
    try {
      return schema.parse(JSON.parse(raw));
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `must be JSON ${shape}: ${(err as Error).message}` });
      return z.NEVER;
    }
  });

/** `host:port` seeds of a Redis Cluster; ioredis discovers the other nodes from them. */
const clusterNodes = csv.transform((seeds, ctx) =>
  seeds.map((seed) => {
    const m = /^([^\s:/@]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(seed);
    const port = Number(m?.[2]);
    if (!m?.[1] || port < 1 || port > 65535) {
      ctx.addIssue({ code: 'custom', message: `"${seed}" is not host:port (credentials go in REDIS_USERNAME / REDIS_PASSWORD)` });
      return { host: '', port: 0 };
    }
    return { host: m[1].replace(/^\[|\]$/g, ''), port };
  }),
);

/** Shard numbers as a list and ranges, e.g. `0,2-3`. */
const shardList = csv
  .transform((parts, ctx) => {
    const shards = new Set<number>();
    for (const part of parts) {
      const m = /^(\d+)(?:-(\d+))?$/.exec(part);
      const from = Number(m?.[1]);
      const to = Number(m?.[2] ?? m?.[1]);
      if (!m || to < from || to > 255) {
        ctx.addIssue({ code: 'custom', message: `"${part}" is not a shard number or range (e.g. 0,2-3)` });
        continue;
      }
      for (let s = from; s <= to; s++) shards.add(s);
    }
    return [...shards].sort((a, b) => a - b);
  })
  .refine((shards) => shards.length > 0, 'names no shard');
const clusterNode = z.object({ host: z.string().min(1), port: z.number().int().min(1).max(65535) });
const shardNumbers = z.array(z.number().int().min(0).max(255)).min(1, 'names no shard');
const modelPrices = z.record(z.string(), priceSchema);
const retiredKeys = z.array(z.string().min(1)).max(50);
const escalationDefaults = z.partialRecord(tenantRoleSchema, escalationSchema);
const audiences = z.array(z.string().min(1)).min(1, 'at least one audience');
const roleMap = z.record(z.string().min(1), roleSchema);
const otlpProtocol = z.enum(['http/protobuf', 'http/json'], { message: 'http/protobuf or http/json (grpc is not supported)' });

// The price lives with the budgets it feeds; re-exported for the modules that still import it from here.
export { type Price, priceSchema } from './price.js';

export const quotaSchema = z.object({
  /** Runs queued or running at once; parked ones (waiting for a person) count apart. */
  maxConcurrentRuns: z.number().int().min(1),
  /** Runs parked waiting for an approval at once; default 10 × maxConcurrentRuns. */
  maxParkedRuns: z.number().int().min(1).optional(),
  tokensPerDay: z.number().int().min(1),
  costPerDayUsd: z.number().min(0),
  /** Fair share: runs over maxConcurrentRuns wait in the tenant's own line (started oldest first as its slots free) instead of a 429. */
  queueBeyondLimit: z.boolean().optional(),
});
export type Quota = z.infer<typeof quotaSchema>;
const quotasSchema = z.object({
  default: quotaSchema,
  tenants: z.record(z.string(), quotaSchema).default({}),
  /**
   * Fair share: runs the `queueBeyondLimit` tenants may run at once across the fleet, all
   * of them together; each freed one goes to the next waiting tenant in turn. Absent: each
   * tenant is bounded by its own `maxConcurrentRuns` only.
   */
  fairShareSlots: z.number().int().min(1).optional(),
});
export type Quotas = z.infer<typeof quotasSchema>;

/**
 * Every setting of every Rein process. Parsed once per process; nothing else reads
 * `process.env`. Names are part of the public contract (docs/configuration.md).
 */
export const configSchema = z.object({
  /** Single-node Redis; `rediss://` for TLS, `redis://user:password@host` for an ACL user. */
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  /** Set: every connection is a Redis Cluster client seeded from these `host:port` nodes, and REDIS_URL is ignored. */
  REDIS_CLUSTER_NODES: clusterNodes.optional(),
  /** ACL user and password for every node; override what REDIS_URL carries. */
  REDIS_USERNAME: z.string().min(1).optional(),
  REDIS_PASSWORD: z.string().min(1).optional(),
  /** TLS on every connection (a single node may say so with `rediss://` instead). */
  REDIS_TLS: z.enum(['on', 'off']).default('off'),
  /** Step-queue shards, each under its own hash tag; a run's steps all go to the shard of its id. */
  REIN_QUEUE_SHARDS: z.coerce.number().int().min(1).max(256).default(1),
  /** Shards this worker consumes (e.g. `0,2-3`); default every shard. Numbers past REIN_QUEUE_SHARDS drain old shards while shrinking. */
  REIN_WORKER_SHARDS: shardList.optional(),
  OPENAI_BASE_URL: z.string().url().default('http://127.0.0.1:8090/v1'),
  OPENAI_API_KEY: z.string().min(1).default('not-needed-for-the-scripted-model'),
  /** The app every service runs (file path or package; default export `defineApp(...)`); default: the order-assistant example. */
  REIN_APP: z.string().min(1).default('@rein/example-order-assistant'),
  /** The app's version (a deploy sets it to the image tag or commit): overrides `defineApp({version})`; default: that, or the app's content hash. */
  REIN_APP_VERSION: appVersionSchema.optional(),
  REIN_MODEL: z.string().min(1).default('rein-scripted'),
  REIN_FALLBACK_MODELS: csv.default([]),
  /**
   * More OpenAI-compatible endpoints, by name; a model id `<name>/<model>` is served by
   * provider <name>, any other id by OPENAI_BASE_URL (the provider `openai`).
   */
  REIN_PROVIDERS: jsonOf(
    providersSchema,
    '{"<name>": {"baseURL", "apiKeyEnv"?, "apiKey"?, "supportsJsonSchema"?, "supportsStreaming"?}}',
  ).default({}),
  /** A model call's whole time, a streamed body included (the run's deadline cuts it sooner). */
  REIN_MODEL_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** The longest silence of a streamed reply once it started; keep-alive comments do not count. */
  REIN_MODEL_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  /** Set: every `/metrics` (api, approver, worker) needs `Authorization: Bearer <token>`; unset, it is open to whoever reaches the port. */
  REIN_METRICS_TOKEN: z
    .string()
    .min(16, 'at least 16 characters')
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .optional(),
  /** Address the HTTP services and the worker's metrics endpoint listen on. */
  REIN_BIND_HOST: z.string().min(1).default('0.0.0.0'),
  /** The browser origins the API answers CORS for (a comma list); empty: no CORS, call it from the same origin. */
  REIN_CORS_ORIGINS: origins.default([]),
  API_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  APPROVER_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(8),
  REIN_TOOL_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  REIN_TOOL_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  /** BullMQ job lock; a worker that dies holding a step releases it after this long. */
  REIN_JOB_LOCK_MS: z.coerce.number().int().min(1000).default(30_000),
  REIN_STEP_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(8),
  REIN_API_KEYS: apiKeys.optional(),
  /** Operator ceilings: a run may ask for more than its profile's defaults, never more than these. */
  REIN_MAX_STEPS_CEILING: z.coerce.number().int().min(1).max(100).default(50),
  REIN_MAX_TOKENS_CEILING: z.coerce.number().int().min(1).default(1_000_000),
  REIN_TIMEOUT_CEILING_MS: z.coerce.number().int().min(1000).default(3_600_000),
  /** Price per million tokens by model id (`<provider>/<model>` for a named provider); models not listed cost 0 (and say so in the trace). */
  REIN_MODEL_PRICES: jsonOf(modelPrices, '{"<model>": {"promptPerMTok", "completionPerMTok"}}').default({
    'gpt-4o': { promptPerMTok: 2.5, completionPerMTok: 10 },
    'gpt-4o-mini': { promptPerMTok: 0.15, completionPerMTok: 0.6 },
    'rein-scripted': { promptPerMTok: 0, completionPerMTok: 0 },
  }),
  /** Refuse to start when a model the fleet may call has no price (else it warns, and those calls cost 0). */
  REIN_REQUIRE_PRICES: flag.default(false),
  /** Per-tenant quotas, enforced across the fleet: `{default: {...}, tenants: {"<id>": {...}}}`. */
  REIN_TENANT_QUOTAS: jsonOf(
    quotasSchema,
    '{default: {maxConcurrentRuns, maxParkedRuns?, tokensPerDay, costPerDayUsd, queueBeyondLimit?}, tenants?, fairShareSlots?}',
  ).default({
    default: { maxConcurrentRuns: 100, tokensPerDay: 5_000_000, costPerDayUsd: 100 },
    tenants: {},
  }),
  /** Circuit breakers (one per model and per tool, state shared by the fleet). */
  REIN_BREAKER_ERROR_PERCENT: z.coerce.number().min(1).max(100).default(50),
  REIN_BREAKER_RESET_MS: z.coerce.number().int().min(100).default(10_000),
  REIN_BREAKER_VOLUME: z.coerce.number().int().min(1).default(5),
  REIN_BREAKER_WINDOW_MS: z.coerce.number().int().min(1000).default(10_000),
  /**
   * Distinct workers whose own breakers for a dependency must open within REIN_BREAKER_WINDOW_MS
   * before it opens for the whole fleet; until then only those workers stop calling it (one
   * node's broken path is not the dependency's outage). 1: any worker's breaker opens the fleet's.
   */
  REIN_BREAKER_FLEET_WORKERS: z.coerce.number().int().min(1).default(2),
  /** Bulkheads: calls at once per dependency in one worker, the fleet-wide limit per model, and the longest wait for a slot. */
  REIN_MODEL_PROCESS_CONCURRENCY: z.coerce.number().int().min(1).default(16),
  REIN_MODEL_FLEET_CONCURRENCY: z.coerce.number().int().min(1).default(64),
  REIN_TOOL_PROCESS_CONCURRENCY: z.coerce.number().int().min(1).default(16),
  REIN_BULKHEAD_WAIT_MS: z.coerce.number().int().min(0).default(2000),
  /** Chaos testing only: lets the fault switch in Redis (FAULTS_KEY) make tools hang. Never enable in production. */
  REIN_FAULT_INJECTION: z.enum(['on', 'off']).default('off'),
  /** The reaper: how often it looks for runs no job will advance, and how long a run must sit unchanged first. */
  REIN_REAPER_INTERVAL_MS: z.coerce.number().int().min(200).default(15_000),
  REIN_REAPER_STALE_MS: z.coerce.number().int().min(100).default(30_000),
  /** How often the deadline sweeper looks for runs past their deadline. */
  REIN_SWEEP_INTERVAL_MS: z.coerce.number().int().min(200).default(5000),
  /** With the archive on: how often the workers copy each tenant's decision-log head to it (a checkpoint truncation is checked against). */
  REIN_AUDIT_CHECKPOINT_INTERVAL_MS: z.coerce.number().int().min(1000).default(60_000),
  /**
   * The fleet's audit key: an Ed25519 private key (PKCS#8 PEM, `\n` escapes allowed) or the
   * path of a file holding one. Set, decisions answer a signed `receipt` and checkpoints are signed.
   */
  REIN_AUDIT_SIGNING_KEY: z.string().min(1).optional(),
  /** Public keys (SPKI PEM, or paths of files holding them) of audit keys rotated out: listed at GET /v1/audit/keys so old receipts still verify. */
  REIN_AUDIT_RETIRED_KEYS: jsonOf(retiredKeys, '["<PEM or path>", ...]').default([]),
  /**
   * Where signed checkpoints of every tenant's chain head go beyond Rein's own stores: an
   * absolute file path (one JSON line per checkpoint, appended) or an https:// URL (POSTed,
   * through the webhooks' address guard). Needs REIN_AUDIT_SIGNING_KEY.
   */
  REIN_AUDIT_CHECKPOINT_SINK: z
    .string()
    .refine((v) => v.startsWith('/') || /^https?:\/\//.test(v), 'an absolute file path or an http(s):// URL')
    .optional(),
  /** The LangGraph store: the largest value (its JSON, bytes), and items one tenant may hold. */
  REIN_STORE_MAX_VALUE_BYTES: z.coerce.number().int().min(256).max(16_777_216).default(65_536),
  REIN_STORE_MAX_ITEMS: z.coerce.number().int().min(1).default(10_000),
  /** The N-th repeat of an identical tool call ends the run (`repeated_call`). */
  REIN_REPEAT_LIMIT: z.coerce.number().int().min(1).default(2),
  /** How deep a tree of sub-agent runs may grow: a run at this depth is offered no `call_<agent>` that runs. */
  REIN_MAX_AGENT_DEPTH: z.coerce.number().int().min(1).max(16).default(3),
  /** The most sub-agent runs one step may start; further calls are refused with an observation. */
  REIN_MAX_CHILDREN_PER_STEP: z.coerce.number().int().min(1).max(64).default(4),
  /** N consecutive failures of one tool end the run (`tool_failures`). */
  REIN_TOOL_FAILURE_LIMIT: z.coerce.number().int().min(1).default(3),
  /** Tool results longer than this reach the model cut (head and tail kept); the trace keeps all. */
  REIN_TOOL_RESULT_MAX_CHARS: z.coerce.number().int().min(200).default(2000),
  /** The most of one tool result (UTF-8 bytes) Rein keeps: a longer one is cut, with a marker, before the journal, trace and model see it. */
  REIN_MAX_TOOL_RESULT_BYTES: z.coerce.number().int().min(1024).default(DEFAULT_MAX_TOOL_RESULT_BYTES),
  APPROVAL_TTL_MS: z.coerce.number().int().positive().default(900_000),
  /** The time within which a team means to decide an approval: what `rein_approval_sla_total` and the console's approval load measure against. */
  REIN_APPROVAL_SLA_MS: z.coerce.number().int().positive().default(600_000),
  /**
   * The app-wide escalation of approvals by the role they need, for policies that name none,
   * and the next link of every escalation chain: `{"approver": {"afterMs": 600000, "toRole": "supervisor"}}`.
   */
  /**
   * Signs one-click approval links (HMAC-SHA256), at least 32 characters; every approver
   * process must share it. Unset: derived from REIN_API_KEYS (changing the keys voids every link).
   */
  REIN_LINK_SECRET: z.string().min(32).optional(),
  /**
   * Four eyes for budget raises (`onBudget: 'ask'`): their requester may not grant one, even
   * holding the role (as for an edit, or a critical approval). `false`: the requester may
   * grant it as proposed, as any high-risk approval.
   */
  REIN_BUDGET_FOUR_EYES: flag.default(true),
  REIN_APPROVAL_ESCALATION: jsonOf(escalationDefaults, '{"<role>": {"afterMs", "toRole"}}').default({}),
  REIN_TRACE_TTL_DAYS: z.coerce.number().int().positive().default(30),
  /** The archive of finished runs (PostgreSQL, `postgres://…`); unset: no archive, runs live in Redis for REIN_TRACE_TTL_DAYS. */
  REIN_ARCHIVE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a postgres:// URL')
    .optional(),
  /** With the archive on: how long a finished, archived run's keys stay in Redis before they are dropped (reads then go to the archive). */
  REIN_HOT_RETENTION_MS: z.coerce.number().int().min(0).default(3_600_000),
  /** With the archive on: archived runs older than this many days are deleted from PostgreSQL; unset: kept. */
  REIN_ARCHIVE_RETENTION_DAYS: z.coerce.number().int().positive().optional(),
  REIN_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  /** Event streams (SSE) one tenant may hold open at once on one api or approver process. */
  REIN_MAX_STREAMS_PER_TENANT: z.coerce.number().int().min(1).default(200),
  /** Of those, the streams one user may hold (so one user cannot take the tenant's every slot). */
  REIN_MAX_STREAMS_PER_USER: z.coerce.number().int().min(1).default(20),
  /** HTTP services: the longest a client may take to send a whole request (headers and body). */
  REIN_HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** HTTP services: a socket with no traffic either way for this long is closed (SSE heartbeats every 15 s keep streams open). */
  REIN_HTTP_IDLE_TIMEOUT_MS: z.coerce.number().int().min(20_000).default(120_000),
  /** HTTP services: how long an idle keep-alive connection stays open; above load balancers' usual 60 s. */
  REIN_HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).default(72_000),
  /** Let webhooks call loopback, private and link-local addresses (tests and local setups only). */
  REIN_WEBHOOK_ALLOW_PRIVATE: flag.default(false),
  REIN_REMOTE_AGENT_ALLOW_PRIVATE: flag.default(false),
  REIN_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /**
   * The approver console's public base URL (`https://approvals.example.com`): an
   * `approval.requested` or `approval.escalated` webhook then carries the approval's
   * `consoleUrl`, for a chat or mail integration to link to (or to mint links for).
   */
  REIN_CONSOLE_URL: z
    .string()
    .url()
    .refine((u) => /^https?:$/.test(new URL(u).protocol), 'an http(s) URL')
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  /** First retry delay of a failed delivery; later ones grow fourfold up to 4 h, for over 24 h in all. */
  REIN_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).default(5_000),
  /** Tokens a session's earlier turns may take in a new run's prompt (oldest turns dropped first). */
  REIN_SESSION_WINDOW_TOKENS: z.coerce.number().int().min(0).default(8_000),
  /** Carry earlier runs' tool calls and results into a session, not only inputs and answers. */
  REIN_SESSION_TOOL_TRAFFIC: flag.default(false),
  /** Schedules one tenant may hold (`POST /v1/schedules` answers 409 too_many_schedules beyond). */
  REIN_SCHEDULES_PER_TENANT: z.coerce.number().int().min(0).default(100),
  /** Cohort replays one tenant may run at once (`POST /v1/replays` answers 409 too_many_cohorts beyond). */
  REIN_REPLAY_COHORTS_PER_TENANT: z.coerce.number().int().min(1).default(2),
  /**
   * Company sign-in: the OpenID Provider's issuer URL (its discovery document is read from
   * `<issuer>/.well-known/openid-configuration`). Set: `Authorization: Bearer <JWT>` signed
   * by the provider is accepted wherever a key is. https, or http on a loopback host only.
   */
  REIN_OIDC_ISSUER: z
    .string()
    .url()
    .refine((u) => {
      const url = new URL(u);
      return url.protocol === 'https:' || (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname));
    }, 'an https URL (http only on localhost)')
    .optional(),
  /** The audiences a token must name one of (comma list): the API's identifier, and the console's client id if it sends ID tokens. */
  REIN_OIDC_AUDIENCE: csv.pipe(audiences).optional(),
  /** Claim paths (a claim's full name, else a dotted path: `realm_access.roles`) for the tenant, the user and the roles. */
  REIN_OIDC_TENANT_CLAIM: z.string().min(1).max(200).default('tenant'),
  REIN_OIDC_USER_CLAIM: z.string().min(1).max(200).default('sub'),
  REIN_OIDC_ROLES_CLAIM: z.string().min(1).max(200).default('roles'),
  /** The provider's role names to Rein's (`{"rein-approvers": "approver"}`); a name not mapped counts only if it is a Rein role. */
  REIN_OIDC_ROLE_MAP: jsonOf(roleMap, '{"<provider role>": "<Rein role>"}').default({}),
  /** Seconds of clock difference tolerated on `exp`, `nbf` and `iat`. */
  REIN_OIDC_CLOCK_TOLERANCE_S: z.coerce.number().int().min(0).max(300).default(30),
  /** The least time between two fetches of the provider's keys when a token names an unknown key id (a rotation). */
  REIN_OIDC_JWKS_COOLDOWN_MS: z.coerce.number().int().min(0).default(30_000),
  /** How long a person's latest company sign-in lets schedules they own fire as them (the provider revokes people; Rein hears of it at sign-in). */
  REIN_OIDC_OWNER_STANDING_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .default(30 * 86_400_000),
  /** The console's client id at the provider (a public client: code flow with PKCE); unset, the console signs in with keys only. */
  REIN_OIDC_CONSOLE_CLIENT_ID: z.string().min(1).max(200).optional(),
  /** Scopes the console asks for, space-separated (`openid` is always asked). */
  REIN_OIDC_CONSOLE_SCOPES: z.string().max(1000).default('openid profile'),
  /** Which token the console sends: the access token (a JWT for REIN_OIDC_AUDIENCE), or the ID token (providers whose access tokens are opaque). */
  REIN_OIDC_CONSOLE_TOKEN: z.enum(['access', 'id']).default('access'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * OpenTelemetry, by the standard names. Without an endpoint no SDK is registered:
   * spans are the API's no-ops and nothing is sent. Headers, timeout and resource
   * attributes (OTEL_EXPORTER_OTLP_HEADERS, ...) are read by the exporter itself.
   */
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).default('false'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** Overrides the above for traces, used as is (no `/v1/traces` appended). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.default('http/protobuf'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  /** Defaults to rein-api, rein-worker or rein-approver. */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_TRACES_SAMPLER: z
    .enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'])
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(0).default(5000),
  OTEL_BSP_EXPORT_TIMEOUT: z.coerce.number().int().min(1).default(30_000),
  OTEL_BSP_MAX_QUEUE_SIZE: z.coerce.number().int().min(1).default(2048),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: z.coerce.number().int().min(1).default(512),
  /** Export prompts, completions and tool payloads on spans (PII-masked like logs). Off: they never leave the process. */
  REIN_OTEL_CAPTURE_CONTENT: z.enum(['true', 'false']).default('false'),
  /** A trace UI's page of one trace, `{traceId}` standing for the run's W3C trace id: the console links each run to it. */
  REIN_TRACE_URL_TEMPLATE: z
    .string()
    .url()
    .refine((s) => s.includes('{traceId}'), 'must contain {traceId}')
    .optional(),
});

export type Config = z.infer<typeof configSchema>;

/**
 * The typed value of each variable parsed from text into something else (lists, JSON,
 * flags), for options given typed (embedding, or the environment once mapped); every other
 * variable's own schema takes its typed value as it is.
 */
const typedValues: { [K in keyof Config]?: z.ZodType<NonNullable<Config[K]>> } = {
  REDIS_CLUSTER_NODES: z.array(clusterNode).min(1),
  REIN_WORKER_SHARDS: shardNumbers,
  REIN_FALLBACK_MODELS: z.array(z.string().min(1)),
  REIN_PROVIDERS: resolvedProvidersSchema,
  REIN_CORS_ORIGINS: z.array(z.string().refine(isOrigin, { error: (i) => notOrigin(String(i.input)) })),
  REIN_API_KEYS: apiKeyList,
  REIN_MODEL_PRICES: modelPrices,
  REIN_REQUIRE_PRICES: z.boolean(),
  REIN_TENANT_QUOTAS: quotasSchema,
  REIN_AUDIT_RETIRED_KEYS: retiredKeys,
  REIN_BUDGET_FOUR_EYES: z.boolean(),
  REIN_APPROVAL_ESCALATION: escalationDefaults,
  REIN_WEBHOOK_ALLOW_PRIVATE: z.boolean(),
  REIN_REMOTE_AGENT_ALLOW_PRIVATE: z.boolean(),
  REIN_SESSION_TOOL_TRAFFIC: z.boolean(),
  REIN_OIDC_AUDIENCE: audiences,
  REIN_OIDC_ROLE_MAP: roleMap,
};

/** The schema of a variable's typed value (options.ts checks compiled options field by field with it); optional when the variable is. */
export function typedValueSchema(name: keyof Config): z.ZodType {
  const env = configSchema.shape[name];
  const typed = typedValues[name];
  if (!typed) return env;
  return env.safeParse(undefined).success ? typed.optional() : typed;
}

/** Parses the environment; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid environment:\n${lines.join('\n')}`);
  }
  return { ...parsed.data, REIN_PROVIDERS: resolveProviderKeys(parsed.data.REIN_PROVIDERS, env) };
}

/** The shards a worker consumes: REIN_WORKER_SHARDS, or all of 0..REIN_QUEUE_SHARDS-1. */
export function workerShards(queue: { shards: number; workerShards?: number[] | undefined }): number[] {
  return queue.workerShards ?? Array.from({ length: queue.shards }, (_, i) => i);
}

/** For process entry points: parse or print the problem and exit 1. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    process.stderr.write(`rein: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

/**
 * Services that authenticate callers need REIN_API_KEYS or company sign-in (REIN_OIDC_ISSUER
 * with REIN_OIDC_AUDIENCE); say so by name if neither. Returns the keys (none with sign-in only).
 */
export function requireCredentials(
  http: { apiKeys: Config['REIN_API_KEYS'] },
  oidc: { issuer: Config['REIN_OIDC_ISSUER']; audience: Config['REIN_OIDC_AUDIENCE'] },
) {
  if (oidc.issuer && !oidc.audience?.length) {
    throw new ConfigError('invalid environment:\n  REIN_OIDC_AUDIENCE: required with REIN_OIDC_ISSUER (the audience tokens must name)');
  }
  if (!http.apiKeys?.length && !oidc.issuer) {
    throw new ConfigError(
      'invalid environment:\n  REIN_API_KEYS: required (a JSON array of {key, tenantId, userId, roles}) unless REIN_OIDC_ISSUER is set',
    );
  }
  return http.apiKeys ?? [];
}
