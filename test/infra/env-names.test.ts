import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** An environment variable's name, as Rein's variables are spelled. */
const ENV_NAME = /^(REIN|OPENAI|WORKER|REDIS|OTEL)_[A-Z0-9_]+$/;
/** Names of that shape that are not variables. */
const NOT_VARIABLES = new Set(['REIN_ATTR']); // the table of Rein's span attribute names
/** Files that may name a variable, and why. */
const EXEMPT: Record<string, string[]> = {
  // Log redaction: an environment-shaped object that reaches a log line loses its secrets.
  'packages/core/src/shared/logger.ts': ['OPENAI_API_KEY', 'REIN_API_KEYS'],
};

/**
 * The variable names `code` uses: identifiers, and string literals that are exactly a
 * name. Comments are not code, and a message may tell the operator which variable to
 * set (`REIN_APP=x: no such package`); neither can read one.
 */
function envNamesIn(code: string): string[] {
  const names: string[] = [];
  const visit = (node: ts.Node) => {
    const text =
      ts.isIdentifier(node) || ts.isPrivateIdentifier(node)
        ? node.text
        : ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)
          ? node.text
          : undefined;
    if (text !== undefined && ENV_NAME.test(text) && !NOT_VARIABLES.has(text)) names.push(text);
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile('x.ts', code, ts.ScriptTarget.Latest, true));
  return names;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** Below the process edge: core and the services, apart from the parsing (config.ts), the mapping (options.ts) and test tooling. */
function componentFiles(): string[] {
  const services = readdirSync(join(root, 'services')).map((s) => join(root, 'services', s, 'src'));
  return [join(root, 'packages/core/src'), ...services]
    .flatMap(sources)
    .map((f) => relative(root, f))
    .filter((f) => !/^packages\/core\/src\/shared\/(config|options)\.ts$/.test(f) && !f.startsWith('packages/core/src/testing/'));
}

describe('components take options; only the edge knows environment variable names', () => {
  it('finds a variable read in code, and none in comments or messages', () => {
    expect(envNamesIn("const n = config.REIN_QUEUE_SHARDS;\nconst u = process.env['REDIS_URL'];")).toEqual([
      'REIN_QUEUE_SHARDS',
      'REDIS_URL',
    ]);
    expect(envNamesIn('const { OTEL_SERVICE_NAME: name } = env;')).toEqual(['OTEL_SERVICE_NAME']);
    expect(
      envNamesIn(
        '// reads WORKER_CONCURRENCY\n/** OPENAI_API_KEY */\nthrow new Error("REIN_APP=" + spec + ": no such package");\nspan(REIN_ATTR.runId);',
      ),
    ).toEqual([]);
  });

  it('no file below the process wiring names one', () => {
    const files = componentFiles();
    expect(files).toContain('services/worker/src/step-worker.ts');
    const found = files.flatMap((file) => {
      const allowed = EXEMPT[file] ?? [];
      return envNamesIn(readFileSync(join(root, file), 'utf8'))
        .filter((name) => !allowed.includes(name))
        .map((name) => `${file}: ${name}`);
    });
    expect(found).toEqual([]);
  });
});
