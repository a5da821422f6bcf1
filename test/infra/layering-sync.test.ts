import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const biomeJson = join(root, 'biome.json');

/** Whether `scripts/layering.mjs --check` finds `file` in sync with the generator. */
function inSync(file?: string): boolean {
  try {
    execFileSync(process.execPath, [join(root, 'scripts/layering.mjs'), '--check', ...(file ? [file] : [])], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

type Biome = {
  overrides: Array<{
    includes: string[];
    linter?: { rules: { style: { noRestrictedImports: { options: { patterns: { group: string[] }[] } } } } };
  }>;
};
/** A copy of the repository's biome.json, changed by `change`. */
function changed(change: (biome: Biome) => void): string {
  const biome = JSON.parse(readFileSync(biomeJson, 'utf8')) as Biome;
  change(biome);
  dir = mkdtempSync(join(tmpdir(), 'rein-layering-sync-'));
  const file = join(dir, 'biome.json');
  writeFileSync(file, JSON.stringify(biome));
  return file;
}
const patternOf = (biome: Biome, includes: string) =>
  biome.overrides.find((o) => o.includes[0] === includes)?.linter?.rules.style.noRestrictedImports.options.patterns[0];

describe('biome.json and scripts/layering.mjs', { timeout: 60_000 }, () => {
  it('are in sync (else run `npm run layering`)', () => {
    expect(inSync()).toBe(true);
  });

  it('are out of sync once a layering pattern is edited by hand', () => {
    const dropped = changed((b) => patternOf(b, 'packages/core/src/shared/*')?.group.pop());
    expect(inSync(dropped)).toBe(false);
    const added = changed((b) => patternOf(b, 'packages/core/src/step/*')?.group.push('../adapters/**'));
    expect(inSync(added)).toBe(false);
  });

  it('keep an override of another kind as it is', () => {
    const other = changed((b) => b.overrides.unshift({ includes: ['examples/**'] }));
    expect(inSync(other)).toBe(true);
  });
});
