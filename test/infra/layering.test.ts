import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const biome = join(root, 'node_modules/.bin/biome');

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Lints `files` laid out like the repo, under a copy of the repo's biome.json; returns biome's JSON diagnostics' rule names. */
function lint(files: Record<string, string>): { rules: string[]; ok: boolean } {
  dir = mkdtempSync(join(tmpdir(), 'rein-layering-'));
  copyFileSync(join(root, 'biome.json'), join(dir, 'biome.json'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  try {
    execFileSync(biome, ['lint', '--reporter=json', '.'], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
    return { rules: [], ok: true };
  } catch (err) {
    const out = (err as { stdout: string }).stdout;
    const report = JSON.parse(out) as { diagnostics: { category: string }[] };
    return { rules: report.diagnostics.map((d) => d.category), ok: false };
  }
}

// Each case runs biome on a copy of the repository: seconds each on a busy machine.
describe('the layering rule is checked by lint', { timeout: 60_000 }, () => {
  it('fails on an import cycle, type-only imports included', () => {
    const { ok, rules } = lint({
      'packages/core/src/adapters/redis/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\n",
      'packages/core/src/adapters/redis/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
    });
    expect(ok).toBe(false);
    expect(rules).toContain('lint/suspicious/noImportCycles');
  });

  it('fails when a lower layer imports a higher one (the shared leaves importing the step pipeline)', () => {
    const { ok, rules } = lint({
      'packages/core/src/step/step.ts': 'export const step = 1;\n',
      'packages/core/src/shared/run.ts': "import { step } from '../step/step.js';\nexport const run = step;\n",
    });
    expect(ok).toBe(false);
    expect(rules).toContain('lint/style/noRestrictedImports');
  });

  it('fails when @rein/contract imports anything but zod, standardwebhooks and itself', () => {
    for (const target of ['@rein/core', '../../core/src/errors.js', 'node:crypto', 'fastify']) {
      const { rules } = lint({
        'packages/contract/src/run.ts': `import { x } from '${target}';\nexport const run = x;\n`,
      });
      expect(rules, target).toContain('lint/style/noRestrictedImports');
    }
    expect(
      lint({
        'packages/contract/src/identity.ts': 'export const role = 1;\n',
        'packages/contract/src/run.ts': "import { z } from 'zod';\nimport { role } from './identity.js';\nexport const run = [z, role];\n",
      }),
    ).toEqual({ rules: [], ok: true });
  });

  it('fails when @rein/define imports the server (it takes zod and the contract only)', () => {
    for (const target of ['@rein/core', '../../core/src/logger.js', 'node:fs', 'pino']) {
      const { rules } = lint({ 'packages/define/src/tool.ts': `import { x } from '${target}';\nexport const y = x;\n` });
      expect(rules, target).toContain('lint/style/noRestrictedImports');
    }
  });

  it('fails when @rein/client imports @rein/core (it takes the contract only)', () => {
    for (const target of ['@rein/core/schemas', 'node:http']) {
      const { rules } = lint({ 'packages/client/src/index.ts': `import { x } from '${target}';\nexport const y = x;\n` });
      expect(rules, target).toContain('lint/style/noRestrictedImports');
    }
  });

  it('fails when an adapter imports a feature (the store importing approvals)', () => {
    const { rules } = lint({
      'packages/core/src/features/approvals/approval.ts': 'export const approval = 1;\n',
      'packages/core/src/adapters/redis/feed.ts':
        "import { approval } from '../../features/approvals/approval.js';\nexport const feed = approval;\n",
    });
    expect(rules).toContain('lint/style/noRestrictedImports');
  });

  it('fails when a pure policy module reaches for the pipeline, an adapter or an I/O package', () => {
    for (const [target, file] of [
      ['../../step/step-processor.js', 'packages/core/src/step/step-processor.ts'],
      ['../../adapters/redis/run-store.js', 'packages/core/src/adapters/redis/run-store.ts'],
      ['ioredis', 'packages/core/src/shared/unused.ts'],
    ] as const) {
      const { rules } = lint({
        [file]: 'export const x = 1;\n',
        'packages/core/src/policy/step/step-policy.ts': `import { x } from '${target}';\nexport const y = x;\n`,
      });
      expect(rules, target).toContain('lint/style/noRestrictedImports');
    }
  });

  it('passes the same files when the arrow points down', () => {
    expect(
      lint({
        'packages/core/src/policy/run/run.ts': 'export const run = 1;\n',
        'packages/core/src/step/step.ts': "import { run } from '../policy/run/run.js';\nexport const step = run;\n",
      }),
    ).toEqual({ rules: [], ok: true });
  });
});
