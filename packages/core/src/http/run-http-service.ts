import type { FastifyInstance } from 'fastify';
import { type Config, loadConfigOrExit } from '../config.js';
import { createRuntime, type Runtime } from '../runtime.js';

/**
 * Entry point of an HTTP service: config (exit 1 naming the bad variable), runtime,
 * listen, and a graceful close on SIGTERM/SIGINT.
 */
export async function runHttpService(service: string, port: (c: Config) => number, build: (rt: Runtime) => FastifyInstance): Promise<void> {
  const config = loadConfigOrExit();
  const rt = await createRuntime(config, service, 'producer');
  let app: FastifyInstance;
  try {
    app = build(rt);
  } catch (err) {
    process.stderr.write(`rein: ${(err as Error).message}\n`);
    process.exit(1);
  }
  await app.listen({ port: port(config), host: config.REIN_BIND_HOST });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, async () => {
      rt.logger.info({ signal }, `${service} shutting down`);
      await app.close();
      await rt.close();
      process.exit(0);
    });
  }
}
