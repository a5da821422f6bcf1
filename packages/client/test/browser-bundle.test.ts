import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Rollup } from 'vite';
import { expect, it } from 'vitest';

const clientDir = join(dirname(fileURLToPath(import.meta.url)), '..');
/** What a browser app must never pull in through the client: the server's packages and Rein's own. */
const SERVER =
  /[\\/]node_modules[\\/](fastify|@fastify|bullmq|ioredis|@opentelemetry|@modelcontextprotocol|@rein[\\/]core)[\\/]|[\\/]packages[\\/]core[\\/]/;

it('bundles for a browser with no Node builtin and no server package (the client takes only @rein/contract)', async () => {
  const imported = new Set<string>();
  const result = await build({
    configFile: false,
    logLevel: 'silent',
    root: clientDir,
    build: { write: false, minify: false, lib: { entry: join(clientDir, 'src', 'index.ts'), formats: ['es'], fileName: 'client' } },
    plugins: [
      {
        name: 'record-imports',
        enforce: 'pre',
        resolveId(source) {
          imported.add(source);
          return null;
        },
      },
    ],
  });
  const outputs = (Array.isArray(result) ? result : [result]) as Rollup.RollupOutput[];
  const chunks = outputs.flatMap((o) => o.output).filter((c): c is Rollup.OutputChunk => c.type === 'chunk');
  const modules = chunks.flatMap((c) => c.moduleIds);

  const builtins = [...imported].filter((s) => s.startsWith('node:') || builtinModules.includes(s));
  expect(builtins).toEqual([]);
  expect(modules.filter((id) => SERVER.test(id))).toEqual([]);
  expect(chunks.map((c) => c.code).join('\n')).not.toContain('__vite-browser-external');
  // Not vacuous: the contract, zod and the webhook verifier are in the bundle.
  expect(modules.some((id) => /[\\/]packages[\\/]contract[\\/]dist[\\/]/.test(id))).toBe(true);
  expect(modules.some((id) => /[\\/]node_modules[\\/]zod[\\/]/.test(id))).toBe(true);
  expect(modules.some((id) => /[\\/]node_modules[\\/]standardwebhooks[\\/]/.test(id))).toBe(true);
}, 60_000);
