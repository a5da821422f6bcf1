import { execFile } from 'node:child_process';
import { lstatSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * What a newcomer does first: a clean `git clone` of this commit, the README's install
 * (`npm install`), the build `npm start` / `npm test` begin with, then `npx rein`. The
 * suite itself is not run again in the clone.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const exec = promisify(execFile);
// Offline for npx: a missing local bin must fail here, not fetch some `rein` from a registry.
const env = { ...process.env, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };

let work: string;
let clone: string;

/** A command in the clone, as a user types it; its exit code and output, whether it fails or not. */
async function sh(command: string, extra: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await exec('bash', ['-c', command], { cwd: clone, env: { ...env, ...extra }, timeout: 900_000 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'rein-clone-'));
  clone = join(work, 'rein');
  const { stdout: head } = await exec('git', ['rev-parse', 'HEAD'], { cwd: root });
  await exec('git', ['clone', '--quiet', '--no-checkout', root, clone]);
  await exec('git', ['checkout', '--quiet', '--detach', head.trim()], { cwd: clone });
}, 120_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true }); // a whole install: give it time
}, 600_000);

describe('a fresh clone', () => {
  it('links `rein` at `npm install`, says how to build it until then, and answers `npx rein --help` after the build', async () => {
    const install = await sh('npm install --loglevel=error');
    expect(install.code, install.out).toBe(0);
    expect(lstatSync(join(clone, 'node_modules', '.bin', 'rein')).isSymbolicLink()).toBe(true);

    const early = await sh('npx rein --help', { npm_config_offline: 'true' });
    expect(early.code).toBe(1);
    expect(early.out).toMatch(/not built yet.*npm run build/);

    const build = await sh('npm run build');
    expect(build.code, build.out.slice(-4000)).toBe(0);
    const help = await sh('npx rein --help', { npm_config_offline: 'true' });
    expect(help.code, help.out).toBe(0);
    expect(help.out).toMatch(/rein dev/);
  }, 1_800_000);
});
