// Writes the layering rule of docs/design.md ("Layers and the one dependency rule") into
// biome.json as per-folder `noRestrictedImports` overrides: `npm run layering`. With
// `--check [file]` it writes nothing and fails when biome.json (or `file`) differs
// (test/infra/layering-sync.test.ts).
// The layers, the adapters and the allowed upward arrows below are the table and the list
// of docs/design.md; change them there and here together.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const SRC = 'packages/core/src';

/** Bottom up. A folder (`x/`) is placed by its lowest layer that is not pure policy; its files of other layers are listed below. */
const LAYERS = [
  ['schemas/', 'errors.ts'],
  ['keys.ts', 'metrics.ts', 'guards/', 'logger.ts', 'config.ts'],
  ['tools/', 'agents/', 'app/'],
  ['budgets/'],
  ['engine/'],
  ['approvals/', 'runs/', 'webhooks/'],
  ['http/', 'runtime.ts', 'index.ts', 'internal.ts'],
];
const POLICY = 3;
const PIPELINE = 4;
/** Beside the stack: they may use the layers below pure policy and each other; the pipeline and above may use them. */
const ADAPTERS = ['model/', 'redis.ts', 'store/', 'queue/', 'mcp/', 'resilience/', 'tracing/', 'archive/'];

/** Pure policy files in folders of other layers: checked one by one. */
const PURE_POLICY = [
  'engine/step-policy.ts',
  'engine/run-transitions.ts',
  'engine/plan.ts',
  'engine/context-policy.ts',
  'engine/loop-guard.ts',
  'engine/structured-output.ts',
  'engine/call-identity.ts',
  'engine/call-plan.ts',
  'engine/tool-result-cap.ts',
  'engine/tool-observation.ts',
  'engine/run-event.ts',
  'engine/version-route.ts',
  'engine/commit-audit.ts',
  'engine/sub-agents.ts',
  'approvals/decision-rights.ts',
  'approvals/approval-binding.ts',
  'approvals/approval-id.ts',
  'approvals/quorum.ts',
  'approvals/escalation.ts',
  'approvals/link-token.ts',
  'budgets/cost.ts',
  'budgets/price.ts',
  'budgets/token-estimator.ts',
];
/** What pure policy may not import besides the adapters and the folders above the pipeline: I/O in folders it shares. */
const NOT_FOR_PURE_POLICY = [
  'lua/',
  'engine/step-processor.ts',
  'engine/tool-executor.ts',
  'engine/apply-transition.ts',
  'engine/delta-publisher.ts',
  'engine/compensation.ts',
  'engine/reaper.ts',
  'engine/deadline-sweeper.ts',
  'engine/child-runs.ts',
  'engine/run-tree.ts',
  'approvals/approval-service.ts',
  'approvals/feed-visibility.ts',
  'budgets/tenant-quotas.ts',
  'budgets/usage-audit.ts',
  'app/load-app.ts',
  'app/registry.ts',
];

/** Upward arrows that remain (docs/design.md, "What is left"): [from, to]. A pattern names what contains `to` no more for what contains `from`. */
const ALLOWED = [
  ['config.ts', 'budgets/'],
  ['config.ts', 'engine/'],
  ['config.ts', 'model/'],
  ['tools/', 'engine/'],
  ['app/', 'store/'],
  ['app/', 'redis.ts'],
  ['app/', 'resilience/'],
  ['budgets/tenant-quotas.ts', 'store/'],
  ['budgets/tenant-quotas.ts', 'redis.ts'],
  ['engine/', 'approvals/'],
  ['engine/plan.ts', 'store/effect-ledger.ts'],
  ['engine/call-plan.ts', 'store/effect-ledger.ts'],
  ['engine/run-transitions.ts', 'store/run-store.ts'],
  ['runs/run-service.ts', 'http/sse.ts'],
  ['store/run-store.ts', 'runs/idempotency.ts'],
];

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

const isFolder = (unit) => unit.endsWith('/');
/** Whether `unit` is `path` or a folder holding it. */
const holds = (unit, path) => unit === path || (isFolder(unit) && path.startsWith(unit));
const name = (unit) => unit.replace(/\/$/, '').replace(/\.ts$/, '');

/** The import specifier pattern of `target` as written in a module of `from`'s folder. */
function specifier(from, target) {
  const dir = isFolder(from) ? from : posix.dirname(from);
  const rel = posix.relative(dir, isFolder(target) ? target.slice(0, -1) : target);
  return `${rel.startsWith('.') ? rel : `./${rel}`}${isFolder(target) ? '/**' : ''}`.replace(/\.ts$/, '.js');
}

function override(from, forbidden, message) {
  const group = forbidden
    .filter((target) => !ALLOWED.some(([f, t]) => holds(from, f) && (holds(target, t) || holds(t, target))))
    .map((target) => specifier(from, target));
  if (group.length === 0) return [];
  const includes = [`${SRC}/${isFolder(from) ? `${from}**` : from}`];
  return [
    { includes, linter: { rules: { style: { noRestrictedImports: { level: 'error', options: { patterns: [{ group, message }] } } } } } },
  ];
}

const SEE = '(see docs/design.md, "Layers")';

/** The layering overrides, the packages' allow-lists first, then folders; a pure file's own override comes after its folder's and names all its folder's do. */
export function layeringOverrides() {
  const above = (layer) => LAYERS.slice(layer + 1).flat();
  const folders = [
    ...LAYERS.flatMap((units, layer) =>
      units.flatMap((unit) =>
        override(
          unit,
          [...above(layer), ...(layer < PIPELINE ? ADAPTERS : [])],
          `layering: ${name(unit)} may not import a higher layer ${SEE}`,
        ),
      ),
    ),
    ...ADAPTERS.flatMap((unit) =>
      override(unit, LAYERS.slice(POLICY).flat(), `layering: ${name(unit)} may not import a higher layer ${SEE}`),
    ),
  ];
  // Folders above the pipeline that hold no pure policy: every file in them is out of reach.
  const wholly = above(PIPELINE).filter((u) => !PURE_POLICY.some((p) => holds(u, p)));
  const impure = [...ADAPTERS, ...wholly, ...NOT_FOR_PURE_POLICY];
  const pure = PURE_POLICY.flatMap((file) =>
    override(file, impure, `layering: ${name(file)} is pure policy: no adapters, pipeline, features or wiring ${SEE}`),
  );
  return [...PACKAGES.map(packageOverride), ...folders, ...pure];
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
