// The file tree of Rein's runtime image, from a built checkout:
//   node scripts/assemble-image.mjs <outdir>
// <outdir> becomes a plain npm project with every published @rein package installed from
// its `npm pack` tarball (production dependencies only) and zod, the peer of @rein/core:
// what a user installs, nothing of the repository's sources or tooling. infra/Dockerfile
// runs exactly this (its build stage), and test/e2e/app-image.int.test.ts runs it too, then
// starts the services from <outdir> with an app of its own, so the two cannot drift.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { packAll } from './pack.mjs';

const [target] = process.argv.slice(2);
if (!target) {
  console.error('usage: node scripts/assemble-image.mjs <outdir>');
  process.exit(2);
}
const out = resolve(target);
if (existsSync(out) && readdirSync(out).length > 0) {
  console.error(`assemble-image: ${out} is not empty`);
  process.exit(2);
}

const root = join(import.meta.dirname, '..');
const zod = JSON.parse(readFileSync(join(root, 'packages/core/package.json'), 'utf8')).devDependencies.zod;
const tarballs = mkdtempSync(join(tmpdir(), 'rein-image-'));
try {
  const packed = packAll(tarballs);
  const manifest = (dependencies) => `${JSON.stringify({ name: 'rein-runtime', private: true, type: 'module', dependencies }, null, 2)}\n`;
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'package.json'), manifest({ ...Object.fromEntries(packed.map((p) => [p.name, `file:${p.tarball}`])), zod }));
  execFileSync('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'], {
    cwd: out,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  // The tarballs go with the build: the installed tree records versions, not their paths.
  writeFileSync(join(out, 'package.json'), manifest({ ...Object.fromEntries(packed.map((p) => [p.name, p.version])), zod }));
  copyFileSync(join(root, 'LICENSE'), join(out, 'LICENSE'));
} finally {
  rmSync(tarballs, { recursive: true, force: true });
}
console.log(`assemble-image: ${out} (start a service with: node_modules/.bin/rein api | worker | approver)`);
