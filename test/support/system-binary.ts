import { existsSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * Whether a system binary that a suite needs is installed. Without it the suite is
 * skipped with a visible notice naming the Debian package to install — except under
 * CI=true, where a missing binary fails loudly (`.ci/run` installs them all).
 */
export function hasSystemBinary(binary: string, debianPackage: string, suite: string): boolean {
  const found = isAbsolute(binary)
    ? existsSync(binary)
    : (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, binary)));
  if (found) return true;
  const what = `${suite} needs ${binary} (apt-get install ${debianPackage})`;
  if (process.env.CI === 'true') throw new Error(`${what}, and CI=true: install it instead of skipping`);
  process.stderr.write(`\n[rein tests] SKIPPED: ${what}\n`);
  return false;
}
