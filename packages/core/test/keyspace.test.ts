import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'dist' ? [] : sources(path);
    return /\.(ts|lua)$/.test(name) ? [path] : [];
  });

describe('the keyspace', () => {
  it('is minted in keys.ts only: no other source spells a rein: key', () => {
    const dirs = ['packages/core/src', 'packages/cli/src', 'services', 'examples'].map((d) => join(repo, d));
    const offenders = dirs
      .flatMap(sources)
      .filter((file) => !file.endsWith(join('core', 'src', 'shared', 'keys.ts')) && !file.includes(`${join('', 'test', '')}`))
      .filter((file) => /['"`]rein:[a-z{$]/.test(readFileSync(file, 'utf8')));
    expect(offenders.map((f) => f.slice(repo.length))).toEqual([]);
  });
});
