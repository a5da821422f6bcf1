import { describe, expect, it } from 'vitest';
import { serviceOptions } from '../src/process/service-lifecycle.js';
import { configSchema, loadConfig } from '../src/shared/config.js';
import { compileOptions, envOptionPaths, optionsFromEnv } from '../src/shared/options.js';

function at(options: object, path: string): unknown {
  return path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], options);
}

describe('options', () => {
  it('maps every variable of configSchema, each onto its own field', () => {
    expect(Object.keys(envOptionPaths).sort()).toEqual(Object.keys(configSchema.shape).sort());
    expect(new Set(Object.values(envOptionPaths)).size).toBe(Object.keys(envOptionPaths).length);
  });

  it('optionsFromEnv carries each parsed value to its path', () => {
    const env = { REIN_QUEUE_SHARDS: '4', REDIS_TLS: 'on', REIN_TOOL_TIMEOUT_MS: '900', LOG_LEVEL: 'warn', REIN_APP: 'x' };
    const config = loadConfig(env);
    const options = optionsFromEnv(env);
    for (const [name, path] of Object.entries(envOptionPaths)) {
      expect(at(options, path), name).toEqual(config[name as keyof typeof config]);
    }
    expect(options.queue.shards).toBe(4);
    expect(options.tools.timeoutMs).toBe(900);
  });

  it('keeps config.ts errors naming the variable', () => {
    expect(() => optionsFromEnv({ REIN_QUEUE_SHARDS: 'zero' })).toThrow(/REIN_QUEUE_SHARDS/);
  });

  it('REIN_CORS_ORIGINS: exact origins, off by default; a path, a wildcard or another scheme is refused by name', () => {
    expect(optionsFromEnv({}).http.corsOrigins).toEqual([]);
    expect(optionsFromEnv({ REIN_CORS_ORIGINS: 'http://localhost:5173, https://chat.example.com' }).http.corsOrigins).toEqual([
      'http://localhost:5173',
      'https://chat.example.com',
    ]);
    for (const bad of [
      '*',
      'https://chat.example.com/',
      'https://chat.example.com/app',
      'chat.example.com',
      'file:///tmp',
      'https://*.example.com',
    ]) {
      expect(() => optionsFromEnv({ REIN_CORS_ORIGINS: bad }), bad).toThrow(/REIN_CORS_ORIGINS.*is not an origin/s);
    }
  });

  it('compileOptions fills defaults around a partial, section by section', () => {
    const options = compileOptions({ queue: { shards: 3 }, logLevel: 'error' });
    expect(options.queue.shards).toBe(3);
    expect(options.queue.stepAttempts).toBe(8);
    expect(options.logLevel).toBe('error');
    expect(options.redis.url).toBe('redis://127.0.0.1:6379');
    expect(compileOptions()).toEqual(optionsFromEnv({}));
  });

  it('services take typed options: the same settings as the environment they stand for', () => {
    const env = { REIN_QUEUE_SHARDS: '2', WORKER_CONCURRENCY: '3', REIN_MODEL: 'm' };
    const compiled = serviceOptions({ options: { queue: { shards: 2, workerConcurrency: 3 }, model: { name: 'm' } } });
    expect(compiled).toEqual(optionsFromEnv(env));
    // The environment-shaped config is still accepted (deprecated, for one release).
    expect(serviceOptions({ config: loadConfig(env) })).toEqual(optionsFromEnv(env));
  });

  it('compileOptions takes back every value the environment parses, lists, JSON and flags included', () => {
    const env = {
      REDIS_CLUSTER_NODES: '10.0.0.1:7000,[::1]:7001',
      REIN_WORKER_SHARDS: '0,2-3',
      REIN_QUEUE_SHARDS: '4',
      REIN_FALLBACK_MODELS: 'a,b',
      REIN_PROVIDERS: '{"local": {"baseURL": "http://127.0.0.1:1/v1", "apiKeyEnv": "LOCAL_KEY"}}',
      LOCAL_KEY: 'k',
      REIN_CORS_ORIGINS: 'http://localhost:5173',
      REIN_API_KEYS: '[{"key": "key-of-alice-1", "tenantId": "t", "userId": "u", "roles": ["user"]}]',
      REIN_MODEL_PRICES: '{"m": {"promptPerMTok": 1, "completionPerMTok": 2}}',
      REIN_REQUIRE_PRICES: 'true',
      REIN_TENANT_QUOTAS: '{"default": {"maxConcurrentRuns": 2, "tokensPerDay": 10, "costPerDayUsd": 1}}',
      REIN_AUDIT_RETIRED_KEYS: '["/keys/old.pem"]',
      REIN_BUDGET_FOUR_EYES: 'false',
      REIN_APPROVAL_ESCALATION: '{"approver": {"afterMs": 60000, "toRole": "admin"}}',
      REIN_WEBHOOK_ALLOW_PRIVATE: 'true',
      REIN_REMOTE_AGENT_ALLOW_PRIVATE: 'true',
      REIN_CONSOLE_URL: 'https://console.example.com/',
      REIN_SESSION_TOOL_TRAFFIC: 'true',
      REIN_OIDC_ISSUER: 'https://id.example.com',
      REIN_OIDC_AUDIENCE: 'rein,console',
      REIN_OIDC_ROLE_MAP: '{"approvers": "approver"}',
    };
    const fromEnv = optionsFromEnv(env);
    expect(fromEnv.model.providers.local?.apiKey).toBe('k');
    expect(compileOptions(fromEnv)).toEqual(fromEnv);
  });

  it('compileOptions refuses a bad value, an unknown option and a cross-field conflict, naming the option and its variable', () => {
    expect(() => compileOptions({ queue: { shards: 0 } })).toThrow(/queue\.shards \(REIN_QUEUE_SHARDS\)/);
    expect(() => compileOptions({ http: { corsOrigins: ['http://a.example/path'] } })).toThrow(
      /http\.corsOrigins\.0 \(REIN_CORS_ORIGINS\).*not an origin/,
    );
    expect(() => compileOptions({ queue: { shard: 2 } as never })).toThrow(/queue.*shard/);
    expect(() => compileOptions({ audit: { checkpointSink: '/var/log/rein.jsonl' } })).toThrow(
      /audit\.checkpointSink \(REIN_AUDIT_CHECKPOINT_SINK\): needs audit\.signingKey/,
    );
    // The environment's options go through the same rules.
    expect(() => optionsFromEnv({ REIN_AUDIT_CHECKPOINT_SINK: '/var/log/rein.jsonl' })).toThrow(/needs audit\.signingKey/);
    expect(() => serviceOptions({ options: { tools: { timeoutMs: -1 } } })).toThrow(/tools\.timeoutMs \(REIN_TOOL_TIMEOUT_MS\)/);
  });
});
