// Checks a release and tags it; publishing is CI's (npm publish --provenance from each package).
//   node scripts/release.mjs          check: metadata, CHANGELOG and upgrading notes, pack, `npm publish --dry-run`
//   node scripts/release.mjs tag      check, then (clean tree, dated CHANGELOG entry) tag v<version>
// Run `npm run build` first: the packages are packed from dist/.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { packAll, publishedWorkspaces } from './pack.mjs';

const root = join(import.meta.dirname, '..');
const read = (file) => readFileSync(join(root, file), 'utf8');
const json = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const problems = [];
const problem = (what) => problems.push(what);

const [mode = 'check'] = process.argv.slice(2);
if (!['check', 'tag'].includes(mode)) {
  console.error('usage: node scripts/release.mjs [check|tag]');
  process.exit(2);
}

// One version for every published package; their dependencies on each other name exactly it.
const dirs = publishedWorkspaces();
const packages = dirs.map((dir) => ({ dir, path: relative(root, dir), pkg: json(dir) }));
const versions = new Set(packages.map((p) => p.pkg.version));
if (versions.size !== 1) problem(`the published packages have different versions: ${[...versions].join(', ')}`);
const [version] = versions;
if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) problem(`version ${version} is not SemVer`);
const names = new Set(packages.map((p) => p.pkg.name));
const rootPkg = json(root);
const repositoryUrl = rootPkg.repository?.url;
if (!repositoryUrl)
  problem(
    'the root package.json names no repository.url: npm provenance needs the GitHub repository the release is built from; set it there and in every package (with its directory)',
  );

for (const { path, pkg } of packages) {
  const where = `${path}/package.json`;
  if (pkg.license !== 'Apache-2.0') problem(`${where}: license is ${pkg.license}, not Apache-2.0`);
  if (!pkg.description) problem(`${where}: no description`);
  if (!pkg.engines?.node) problem(`${where}: no engines.node`);
  if (!Array.isArray(pkg.files) || !pkg.files.includes('dist')) problem(`${where}: files does not list dist`);
  if (pkg.publishConfig?.access !== 'public' || pkg.publishConfig?.provenance !== true)
    problem(`${where}: publishConfig must be {"access": "public", "provenance": true}`);
  if (repositoryUrl && (pkg.repository?.url !== repositoryUrl || pkg.repository?.directory !== path))
    problem(`${where}: repository must be {"type": "git", "url": "${repositoryUrl}", "directory": "${path}"}`);
  for (const [entry, target] of Object.entries(pkg.exports ?? {}))
    if (typeof target !== 'object' || !target.types) problem(`${where}: export "${entry}" has no types`);
  for (const [dep, range] of Object.entries(pkg.dependencies ?? {}))
    if (names.has(dep) && range !== version) problem(`${where}: depends on ${dep}@${range}, not ${version}`);
}

// The notes: a CHANGELOG entry (Keep a Changelog) and an upgrading section for the version.
const entry = read('CHANGELOG.md').match(new RegExp(`^## \\[${version.replaceAll('.', '\\.')}\\](?: - (\\S+))?$`, 'm'));
if (!entry) problem(`CHANGELOG.md has no "## [${version}] - YYYY-MM-DD" entry`);
if (!new RegExp(`^## ${version.replaceAll('.', '\\.')}\\b`, 'm').test(read('docs/upgrading.md')))
  problem(`docs/upgrading.md has no "## ${version}" section`);
if (mode === 'tag' && !/^\d{4}-\d{2}-\d{2}$/.test(entry?.[1] ?? '')) problem(`CHANGELOG.md: date the ${version} entry before tagging`);

// Packed as npm packs them, each checked by npm's own dry run (from the unpacked tarball: no lifecycle scripts).
const work = mkdtempSync(join(tmpdir(), 'rein-release-'));
try {
  for (const { name, tarball, files } of packAll(join(work, 'tarballs'))) {
    for (const needed of ['package.json', 'README.md', 'LICENSE'])
      if (!files.includes(needed)) problem(`${name}: the tarball has no ${needed}`);
    if (!files.some((f) => f.endsWith('.d.ts'))) problem(`${name}: the tarball has no type declarations`);
    const unpacked = join(work, name.replace('/', '+'));
    mkdirSync(unpacked);
    execFileSync('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1']);
    try {
      const out = execFileSync('npm', ['publish', '--dry-run', '--ignore-scripts', '--loglevel=notice'], {
        cwd: unpacked,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      if (!out.includes(`+ ${name}@${version}`)) problem(`${name}: npm publish --dry-run did not name ${name}@${version}`);
    } catch (err) {
      problem(
        `${name}: npm publish --dry-run failed: ${String(err.stderr ?? err.message)
          .trim()
          .split('\n')
          .at(-1)}`,
      );
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (problems.length) {
  console.error(`release ${version}: ${problems.length} problem(s)\n${problems.map((p) => `- ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(`release ${version}: ${packages.length} packages pack and pass npm publish --dry-run`);

if (mode === 'tag') {
  if (execFileSync('git', ['status', '--porcelain'], { cwd: root, encoding: 'utf8' }).trim())
    throw new Error('the working tree has changes: commit them before tagging');
  execFileSync('git', ['tag', '-a', `v${version}`, '-m', `Rein ${version}`], { cwd: root, stdio: 'inherit' });
  console.log(`tagged v${version}: push it (git push origin v${version}); CI publishes each package with npm publish --provenance`);
}
