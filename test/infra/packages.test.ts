import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { minVersion, satisfies } from 'semver';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const json = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8'));
const workspaces = ['packages', 'services', 'examples'].flatMap((dir) =>
  readdirSync(join(root, dir)).map((name) => `${dir}/${name}/package.json`),
);

describe('the Node versions the lockfile installs on', () => {
  const lowest = minVersion(json('package.json').engines.node)?.version as string;

  it('every package of the lockfile accepts the lowest Node the repository supports', () => {
    expect(lowest).toBe('20.19.0');
    const refusing = Object.entries(json('package-lock.json').packages as Record<string, { version?: string; engines?: unknown }>)
      .filter(([, pkg]) => {
        const node = (pkg.engines as { node?: unknown } | undefined)?.node;
        return typeof node === 'string' && !satisfies(lowest, node);
      })
      .map(([path, pkg]) => `${path}@${pkg.version}: node ${(pkg.engines as { node: string }).node}`);
    expect(refusing).toEqual([]);
  });

  it('every workspace declares the same Node range and the Apache-2.0 licence', () => {
    for (const file of ['package.json', ...workspaces]) {
      const pkg = json(file);
      expect(pkg.license, file).toBe('Apache-2.0');
      if (!pkg.private) expect(pkg.engines?.node, file).toBe(json('package.json').engines.node);
    }
  });
});
