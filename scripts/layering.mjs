// Writes the layering rule of docs/design.md ("Layers and the one dependency rule") into
// biome.json as per-folder `noRestrictedImports` overrides: `npm run layering`. With
// `--check [file]` it writes nothing and fails when biome.json (or `file`) differs
// (test/infra/layering-sync.test.ts).
// The layers below are the table of docs/design.md; change them there and here together.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const SRC = 'packages/core/src';

/**
 * Bottom up, one row per folder: a module may import its own layer and those below it,
 * never one above. `testing/` (test support) and the package's entry points
 * (`index.ts`, `worker.ts`, `http.ts`, `cli.ts`, `internal.ts`) stand outside the rule.
 */
const LAYERS = ['shared/', 'policy/', 'adapters/', 'step/', 'features/', 'process/', 'http/'];

/** Packages of I/O that pure policy may not reach, whatever it imports them for. */
const IO_PACKAGES = [
  'ioredis',
  'bullmq',
  'pg',
  'fastify',
  '@fastify/**',
  'undici',
  'openai',
  'opossum',
  '@modelcontextprotocol/**',
  'node:fs',
  'node:net',
  'node:http',
  'node:https',
  'node:child_process',
];
const POLICY = 'policy/';

/** Packages that ship without the server: each may import only what it lists and its own modules. */
const PACKAGES = [
  {
    dir: 'packages/contract/src',
    allowed: ['zod', 'standardwebhooks'],
    message: 'the contract imports only zod, standardwebhooks and itself: nothing of Rein, no Node builtins, no server packages',
  },
  {
    dir: 'packages/define/src',
    allowed: ['zod', '@rein/contract'],
    message: 'the definition API imports only zod, @rein/contract and itself: an app installs it without the server',
  },
  {
    dir: 'packages/client/src',
    allowed: ['@rein/contract'],
    message: 'the client imports only @rein/contract and itself: it runs in browsers, without the server',
  },
];

function packageOverride({ dir, allowed, message }) {
  const group = ['**', ...allowed.map((a) => `!${a}`), '!./*.js'];
  return {
    includes: [`${dir}/**`],
    linter: {
      rules: {
        style: { noRestrictedImports: { level: 'error', options: { patterns: [{ group, message: `layering: ${message} ${SEE}` }] } } },
      },
    },
  };
}

/** How deep a module may sit below its layer's folder (`step/x.ts` is 0, `policy/run/x.ts` 1, `adapters/redis/lua/x.ts` 2). */
const DEPTHS = 3;

function override(includes, group, message) {
  return {
    includes,
    linter: { rules: { style: { noRestrictedImports: { level: 'error', options: { patterns: [{ group, message }] } } } } },
  };
}

const SEE = '(see docs/design.md, "Layers")';

/** The layering overrides: the packages' allow-lists first, then one per layer and depth of core, naming the layers above it. */
export function layeringOverrides() {
  const perLayer = LAYERS.flatMap((folder, layer) =>
    Array.from({ length: DEPTHS }, (_, depth) => {
      const up = '../'.repeat(depth + 1);
      const above = LAYERS.slice(layer + 1).map((higher) => `${up}${higher}**`);
      const io = folder === POLICY ? IO_PACKAGES : [];
      const message = `layering: ${folder.slice(0, -1)} may not import a higher layer${io.length ? ' or an I/O package (it is pure policy)' : ''} ${SEE}`;
      return above.length + io.length === 0 ? [] : [override([`${SRC}/${folder}${'*/'.repeat(depth)}*`], [...above, ...io], message)];
    }).flat(),
  );
  return [...PACKAGES.map(packageOverride), ...perLayer];
}

const isLayering = (o) =>
  o.linter?.rules?.style?.noRestrictedImports?.options?.patterns?.some((p) => p.message?.startsWith('layering:')) === true;

/** biome.json with its layering overrides generated; other overrides are kept, before them. */
export function withLayering(biome) {
  return { ...biome, overrides: [...(biome.overrides ?? []).filter((o) => !isLayering(o)), ...layeringOverrides()] };
}

const root = join(import.meta.dirname, '..');
if (process.argv[1] === import.meta.filename) {
  const [mode, checked] = process.argv.slice(2);
  const file = checked ?? join(root, 'biome.json');
  const current = JSON.parse(readFileSync(file, 'utf8'));
  const wanted = withLayering(current);
  if (mode === '--check') {
    if (!isDeepStrictEqual(current, wanted)) {
      console.error(`${file} is out of sync with scripts/layering.mjs: run \`npm run layering\``);
      process.exit(1);
    }
  } else {
    writeFileSync(file, `${JSON.stringify(wanted, null, 2)}\n`);
    execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', file], { stdio: 'inherit' });
  }
}
