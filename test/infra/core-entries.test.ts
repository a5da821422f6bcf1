import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/**
 * `@rein/core`'s internal entries, one per kind of importer (docs/design.md, "Public
 * surface"): the sources that may import each (tests and benches may import any).
 * `@rein/core/internal` is for tests and benches only.
 */
const ENTRIES: Record<string, { file: string; role?: string; importers?: RegExp }> = {
  '@rein/core/worker': { file: 'packages/core/src/worker.ts', role: 'the worker', importers: /^services\/worker\/src\// },
  '@rein/core/http': { file: 'packages/core/src/http.ts', role: 'the api and the approver', importers: /^services\/(api|approver)\/src\// },
  '@rein/core/cli': { file: 'packages/core/src/cli.ts', role: 'the CLI', importers: /^packages\/cli\/src\// },
  '@rein/core/internal': { file: 'packages/core/src/internal.ts' },
};

const isTest = (path: string) => /(^|\/)test\//.test(path) || path.startsWith('bench/');

/** Every source file of the repository outside core's own sources (they import each other, not the entries). */
function sources(dir = ''): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory())
      return ['node_modules', 'dist', '.git', '.turbo', 'packages/core/src'].some((skip) => entry.name === skip || path === skip)
        ? []
        : sources(path);
    return /\.(ts|tsx|mts|js|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** The names each file imports from an entry; a namespace or dynamic import is `*`, which names nothing (import by name). */
function importsOf(path: string): { entry: string; names: string[] }[] {
  const text = readFileSync(join(root, path), 'utf8');
  if (!text.includes('@rein/core/')) return [];
  const found: { entry: string; names: string[] }[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const bindings = ts.isImportDeclaration(node) ? node.importClause?.namedBindings : node.exportClause;
      const names =
        bindings && (ts.isNamedImports(bindings) || ts.isNamedExports(bindings))
          ? bindings.elements.map((e) => (e.propertyName ?? e.name).text)
          : ['*'];
      found.push({ entry: node.moduleSpecifier.text, names });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [specifier] = node.arguments;
      if (specifier && ts.isStringLiteral(specifier)) found.push({ entry: specifier.text, names: ['*'] });
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true));
  return found.filter((i) => i.entry in ENTRIES);
}

/** The names an entry exports: re-exports only (`export {…} from`, `export * as x from`), anything else reported. */
function exportedNames(file: string): { names: string[]; other: string[] } {
  const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const names: string[] = [];
  const other: string[] = [];
  for (const statement of source.statements) {
    const clause = ts.isExportDeclaration(statement) ? statement.exportClause : undefined;
    if (clause && ts.isNamedExports(clause)) names.push(...clause.elements.map((e) => e.name.text));
    else if (clause && ts.isNamespaceExport(clause)) names.push(clause.name.text);
    else other.push(statement.getText(source).split('\n')[0] as string);
  }
  return { names, other };
}

describe("@rein/core's internal entries", () => {
  const imports = sources().flatMap((path) => importsOf(path).map((i) => ({ path, ...i })));

  it('are what package.json exports', () => {
    const exported = Object.keys(JSON.parse(readFileSync(join(root, 'packages/core/package.json'), 'utf8')).exports);
    expect(exported).toEqual(expect.arrayContaining(Object.keys(ENTRIES).map((e) => e.replace('@rein/core', '.'))));
  });

  for (const [entry, { file, role, importers }] of Object.entries(ENTRIES)) {
    describe(entry, () => {
      const { names, other } = exportedNames(file);

      it('holds re-exports only, each name once', () => {
        expect(other).toEqual([]);
        expect(names.length).toBeGreaterThan(0);
        expect(new Set(names).size).toBe(names.length);
      });

      it(`is imported by ${role ? `${role}'s sources and by ` : ''}tests and benches only`, () => {
        const strays = imports.filter((i) => i.entry === entry && !isTest(i.path) && !importers?.test(i.path)).map((i) => i.path);
        expect(strays).toEqual([]);
      });

      it('exports only names its importers import', () => {
        const used = new Set(imports.filter((i) => i.entry === entry).flatMap((i) => i.names));
        expect(names.filter((name) => !used.has(name))).toEqual([]);
      });
    });
  }

  it('export every name imported from them, in a script a test runs as a process of its own too', () => {
    // The imports above are read as code; a script in a string (a worker a test spawns) is text, read here.
    const scripted = /import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'(@rein\/core\/[a-z]+)'/g;
    const missing = sources().flatMap((path) =>
      [...readFileSync(join(root, path), 'utf8').matchAll(scripted)].flatMap(([, list, entry]) => {
        const spec = ENTRIES[entry as string];
        if (!spec) return [];
        const names = exportedNames(spec.file).names;
        return (list as string)
          .split(',')
          .map(
            (n) =>
              n
                .trim()
                .replace(/^type\s+/, '')
                .split(/\s+as\s+/)[0] as string,
          )
          .filter((n) => n !== '' && !names.includes(n))
          .map((n) => `${path}: ${n} from ${entry}`);
      }),
    );
    expect(missing).toEqual([]);
  });

  it('@rein/core/worker re-exports nothing of the HTTP shell (http/), so a worker loads no Fastify', () => {
    const text = readFileSync(join(root, ENTRIES['@rein/core/worker']?.file as string), 'utf8');
    expect(text.match(/from '\.\/http[/.][^']*'/g) ?? []).toEqual([]);
  });
});
