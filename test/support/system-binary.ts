import { existsSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * Whether a system binary that a suite needs is installed. Without it the suite is
 * skipped with a visible notice naming the Debian package to install — except under
 * CI=true, where a missing binary fails loudly (`.ci/run` installs them all).
 */
export function hasSystemBinary(binary: string, debianPackage: string, suite: string): boolean {
  return onPath(binary) || missingTool(`${suite} needs ${binary} (apt-get install ${debianPackage})`);
}

/** Whether an executable of that name (or that absolute path) exists. */
export function onPath(binary: string): boolean {
  return isAbsolute(binary)
    ? existsSync(binary)
    : (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, binary)));
}

/** A suite's tool is missing: a visible notice and a skip, or under CI=true a failure. */
export function missingTool(what: string): false {
  if (process.env.CI === 'true') throw new Error(`${what}, and CI=true: install it instead of skipping`);
  process.stderr.write(`\n[rein tests] SKIPPED: ${what}\n`);
  return false;
}
