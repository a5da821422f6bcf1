import type { App } from '@rein/define/internal';
import type { FastifyInstance } from 'fastify';
import { createRuntime, type Runtime, type RuntimeOptions } from '../process/runtime.js';
import {
  closeOnSignals,
  exitOnStartError,
  type RunningService,
  type ServiceOptions,
  serviceOptions,
} from '../process/service-lifecycle.js';
import type { ReinOptions } from '../shared/options.js';

/**
 * An HTTP service over an app: runtime, listen, and a graceful close (on
 * SIGTERM/SIGINT unless told otherwise). A bad config or app exits 1 naming it.
 */
export async function runHttpService(
  service: string,
  app: App,
  options: ServiceOptions,
  port: (http: ReinOptions['http']) => number,
  build: (rt: Runtime) => FastifyInstance,
  runtime: RuntimeOptions = {},
): Promise<RunningService & { http: FastifyInstance }> {
  const compiled = serviceOptions(options);
  const rt = await createRuntime(compiled, service, 'producer', app, runtime).catch(exitOnStartError);
  let http: FastifyInstance;
  try {
    http = build(rt);
  } catch (err) {
    process.stderr.write(`rein: ${(err as Error).message}\n`);
    process.exit(1);
  }
  await http.listen({ port: port(compiled.http), host: compiled.http.bindHost });
  const running = {
    runtime: rt,
    http,
    async close() {
      await http.close();
      await rt.close();
    },
  };
  if (options.handleSignals ?? true) closeOnSignals(running, service);
  return running;
}
