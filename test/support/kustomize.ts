import { execFileSync } from 'node:child_process';
import { missingTool, onPath } from './system-binary.js';

/** Components, replacements and `labels:` as infra/k8s uses them. */
const MIN_MAJOR = 5;

/**
 * The command that renders a kustomization, `kustomize build` or `kubectl kustomize` (kubectl
 * 1.27 and later embed kustomize 5), or undefined after a skip notice (a failure under CI=true).
 * No Debian package has one recent enough (bookworm's kubernetes-client is kubectl 1.20).
 */
export function findKustomize(suite: string): string[] | undefined {
  const candidates: Array<[string[], () => string | undefined]> = [
    [['kustomize', 'build'], () => run('kustomize', ['version'])],
    [['kubectl', 'kustomize'], () => JSON.parse(run('kubectl', ['version', '--client', '-o', 'json']) ?? '{}').kustomizeVersion],
  ];
  for (const [command, version] of candidates) {
    if (!onPath(command[0] as string)) continue;
    const major = Number(/v(\d+)\./.exec(version() ?? '')?.[1] ?? 0);
    if (major >= MIN_MAJOR) return command;
  }
  missingTool(`${suite} needs kustomize ${MIN_MAJOR} or later (kustomize, or kubectl 1.27 or later)`);
  return undefined;
}

function run(binary: string, args: string[]): string | undefined {
  try {
    return execFileSync(binary, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return undefined;
  }
}
