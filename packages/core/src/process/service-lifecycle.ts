import { ArchiveSchemaError } from '../adapters/postgres/migrations.js';
import type { Config } from '../shared/config.js';
import { ArchiveUnavailableError, ConfigError, McpServerStartError, RedisUnavailableError } from '../shared/errors.js';
import { compileOptions, loadOptionsOrExit, type PartialReinOptions, type ReinOptions } from '../shared/options.js';
import type { Runtime } from './runtime.js';

/*
 * A service's life as a process, whatever it serves (the worker serves no HTTP API):
 * its options, its start errors, its end on a signal. No Fastify here.
 */

/** How `startApi` / `startWorker` / `startApprover` run: config (default: the environment) and signal handling. */
export interface ServiceOptions {
  /** Typed options for embedding; left-out fields take their defaults (not the environment). */
  options?: PartialReinOptions;
  /** @deprecated The environment-shaped settings; pass `options` instead. Kept for one release. */
  config?: Config;
  /** Close gracefully on SIGTERM/SIGINT and exit (default true; embedders that own the process say false). */
  handleSignals?: boolean;
}

/** The options a service runs with, compiled once: `options`, else the deprecated `config`, else the environment. */
export function serviceOptions(options: Pick<ServiceOptions, 'options' | 'config'>): ReinOptions {
  if (options.options) return compileOptions(options.options);
  return options.config ? compileOptions({}, options.config) : loadOptionsOrExit();
}

/** A started service: its runtime, and a graceful close. */
export interface RunningService {
  runtime: Runtime;
  close(): Promise<void>;
}

/** On SIGTERM/SIGINT: close, then exit 0. */
export function closeOnSignals(service: RunningService, name: string): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, async () => {
      service.runtime.logger.info({ signal }, `${name} shutting down`);
      await service.close();
      process.exit(0);
    });
  }
}

/**
 * What the runtime finds wrong at start — an app whose tools factory fails its checks, a
 * required MCP server that cannot start — ends the process with one line naming it,
 * as a bad REIN_APP does.
 */
export function exitOnStartError(err: unknown): never {
  const archive = err instanceof ArchiveSchemaError || err instanceof ArchiveUnavailableError;
  if (!(err instanceof McpServerStartError || err instanceof ConfigError || err instanceof RedisUnavailableError || archive)) throw err;
  // The archive's answer over HTTP leaves its cause out; the operator starting the service needs it.
  const cause = err instanceof ArchiveUnavailableError && err.cause instanceof Error ? ` (${err.cause.message})` : '';
  process.stderr.write(`rein: ${err.message}${cause}\n`);
  process.exit(1);
}
