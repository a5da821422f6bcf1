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
});
