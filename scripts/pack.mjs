// `npm pack` of every published workspace (those not marked private) into one folder:
//   node scripts/pack.mjs <dest>
// The tutorial's from-a-checkout install and the app image (scripts/assemble-image.mjs)
// both start here, so neither keeps its own list of packages.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');

/** The workspaces npm would publish: every `<dir>/*` of the root's workspaces not marked private. */
export function publishedWorkspaces() {
  const { workspaces } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return workspaces
    .flatMap((pattern) => readdirSync(join(root, pattern.replace(/\/\*$/, ''))).map((name) => join(root, pattern.replace(/\*$/, ''), name)))
    .filter((dir) => !JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).private)
    .sort();
}

/** Packs them into `dest`; returns each package's name, tarball path and packed files. */
export function packAll(dest) {
  const out = resolve(dest);
  mkdirSync(out, { recursive: true });
  return publishedWorkspaces().map((dir) => {
    if (!readdirSync(dir).includes('dist')) throw new Error(`${dir} is not built: run \`npm run build\` at the repository root first`);
    const [info] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: dir, encoding: 'utf8' }));
    return { name: info.name, version: info.version, tarball: join(out, info.filename), files: info.files.map((f) => f.path) };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dest] = process.argv.slice(2);
  if (!dest) {
    console.error('usage: node scripts/pack.mjs <dest>');
    process.exit(2);
  }
  for (const { tarball } of packAll(dest)) console.log(tarball);
}
