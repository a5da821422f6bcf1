import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** The production sources: every `src` of a package or a service, recursively. */
function sources(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (/\.(ts|mts|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts')) files.push(path);
    }
  };
  for (const group of ['packages', 'services']) {
    for (const unit of readdirSync(join(root, group), { withFileTypes: true })) {
      if (!unit.isDirectory()) continue;
      try {
        walk(join(root, group, unit.name, 'src'));
      } catch {
        // a unit without sources
      }
    }
  }
  return files;
}

/** The code of a file without its comments (a doc comment may name the method). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/** Where a run's record is written: a reference to compareAndSet, or a call of a `.commit(`. */
const WRITE = /\bcompareAndSet\b|\.commit\s*\(/g;

const STORES = [
  'packages/core/src/adapters/redis/',
  'packages/core/src/policy/ports/run-repository.ts',
  'packages/core/src/testing/memory-runs.ts',
];

describe("the run record's writers", () => {
  it('write through one call site, the applier’s: nothing else outside the store commits', () => {
    const sites = sources()
      .map((file) => relative(root, file))
      // The stores themselves: the port that declares the commit, its Redis and in-memory implementations.
      .filter((file) => !STORES.some((store) => file.startsWith(store)))
      .flatMap((file) => (code(readFileSync(join(root, file), 'utf8')).match(WRITE) ?? []).map((hit) => `${file}: ${hit}`));
    expect(sites).toEqual(['packages/core/src/step/apply-transition.ts: compareAndSet']);
  });

  it('finds a call site the scan is meant to catch (the pattern is not blind)', () => {
    const hits = code('await deps.store.commit({ from: run });\nconst next = await store.compareAndSet(c); // compareAndSet').match(WRITE);
    expect(hits).toEqual(['.commit(', 'compareAndSet']);
  });
});
