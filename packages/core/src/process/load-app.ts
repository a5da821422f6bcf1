import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type App, isApp } from '@rein/define/internal';
import { ConfigError } from '../shared/errors.js';

/** Where an app module lives: a file path (relative to `cwd`), or a package resolved from `cwd`, then from core. */
function locate(spec: string, cwd: string): string {
  if (spec.startsWith('.') || isAbsolute(spec)) return pathToFileURL(resolve(cwd, spec)).href;
  for (const from of [join(cwd, 'package.json'), fileURLToPath(import.meta.url)]) {
    try {
      return pathToFileURL(createRequire(from).resolve(spec)).href;
    } catch {
      // not installed there; try the next place
    }
  }
  throw new ConfigError(`REIN_APP=${spec}: no such package here (install it, or give the app's file path)`);
}

/**
 * A module whose top-level await can never settle leaves nothing for the event loop to
 * do: Node would exit with code 13 and no word. `beforeExit` fires first — say why.
 */
function unlessStalled<T>(loading: Promise<T>, spec: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const stalled = () =>
      reject(new ConfigError(`REIN_APP=${spec}: its top-level await never settles (it waits on nothing that can finish)`));
    process.once('beforeExit', stalled);
    loading.then(resolve, reject).finally(() => process.off('beforeExit', stalled));
  });
}

/** Imports `REIN_APP`; its default export must be a `defineApp(...)` value. Definition errors keep their message. */
export async function loadApp(spec: string, cwd: string = process.cwd()): Promise<App> {
  const url = locate(spec, cwd);
  let mod: { default?: unknown };
  try {
    mod = await unlessStalled(import(url), spec);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`REIN_APP=${spec}: cannot load it: ${(err as Error).message}`);
  }
  if (!isApp(mod.default)) throw new ConfigError(`REIN_APP=${spec}: its default export is not a defineApp(...) value`);
  return mod.default;
}

/** For process entry points: the app of `options.app` (REIN_APP), or print why not and exit 1. */
export async function loadAppOrExit(options: { app: string }, cwd?: string): Promise<App> {
  try {
    return await loadApp(options.app, cwd);
  } catch (err) {
    process.stderr.write(`rein: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
