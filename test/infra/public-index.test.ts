import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** The most names `@rein/core`'s root may export (docs/design.md, "Public surface"); more belong in an internal entry (test/infra/core-entries.test.ts). */
const PUBLIC_EXPORT_CEILING = 60;

/**
 * The names a module exports, read from its syntax. The index is re-exports only (`export {…} from`),
 * so this is exact; anything else in it (`export *`, a local declaration) is reported instead of guessed at.
 */
function exportedNames(path: string): { names: string[]; other: string[] } {
  const source = ts.createSourceFile(path, readFileSync(join(root, path), 'utf8'), ts.ScriptTarget.Latest);
  const names: string[] = [];
  const other: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause))
      names.push(...statement.exportClause.elements.map((e) => e.name.text));
    else other.push(statement.getText(source).split('\n')[0] as string);
  }
  return { names, other };
}

/**
 * What the user docs show as code: inline code spans and fenced blocks of README.md and docs/*.md,
 * less the design note (it names internals for contributors) and the upgrading notes (they name
 * what left the root).
 */
const NOT_USER_DOCS = ['design.md', 'upgrading.md'];
function documentedCode(): string {
  const files = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md') && !NOT_USER_DOCS.includes(f))
      .map((f) => `docs/${f}`),
  ];
  return files
    .map((f) => readFileSync(join(root, f), 'utf8'))
    .flatMap((text) => [...text.matchAll(/```[^\n]*\n([\s\S]*?)```|`([^`\n]+)`/g)].map((m) => m[1] ?? m[2]))
    .join('\n');
}

describe("@rein/core's public index", () => {
  const { names, other } = exportedNames('packages/core/src/index.ts');

  it('holds re-exports only, so its names can be counted', () => {
    expect(other).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });

  it(`exports at most ${PUBLIC_EXPORT_CEILING} names, the ceiling docs/design.md states`, () => {
    expect(names.length).toBeGreaterThan(0);
    expect(names.length).toBeLessThanOrEqual(PUBLIC_EXPORT_CEILING);
    expect(readFileSync(join(root, 'docs/design.md'), 'utf8')).toContain(`at most **${PUBLIC_EXPORT_CEILING} names**`);
  });

  it('exports only names the README or the user docs in docs/ show as code', () => {
    const code = documentedCode();
    expect(names.filter((name) => !new RegExp(`\\b${name}\\b`).test(code))).toEqual([]);
  });

  it("is all the examples' apps import: none reaches for @rein/core/internal", () => {
    const sources = readdirSync(join(root, 'examples'), { recursive: true, encoding: 'utf8' }).filter((f) =>
      /^[^/]+\/src\/.*\.(ts|mjs|js)$/.test(f),
    );
    expect(sources.length).toBeGreaterThan(0);
    expect(sources.filter((f) => readFileSync(join(root, 'examples', f), 'utf8').includes('@rein/core/internal'))).toEqual([]);
  });
});
