import type { VersionManifest } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { changedNames, withdrawalUnder } from '../src/policy/app/version-manifest.js';

const manifest = (tools: Record<string, string>): VersionManifest => ({
  version: 'v',
  registeredAt: '2026-12-05T00:00:00.000Z',
  tools: Object.fromEntries(Object.entries(tools).map(([n, digest]) => [n, { digest, kind: 'write', roles: null }])),
  agents: {},
  mcpServers: [],
});

describe('version manifests compared', () => {
  it('name what was added, removed and changed by digest', () => {
    const before = manifest({ a: '1', b: '2', c: '3' }).tools;
    const after = manifest({ a: '1', b: '9', d: '4' }).tools;
    expect(changedNames(before, after)).toEqual({ added: ['d'], removed: ['c'], changed: ['b'] });
  });

  it('withdraw an approval whose tool changed or is gone, as an upgrade would, and keep one asked under the same digest', () => {
    const after = manifest({ write: 'd2' });
    expect(withdrawalUnder('write', 'd2', after)).toBeNull();
    expect(withdrawalUnder('write', 'd1', after)).toBe('tool_changed');
    expect(withdrawalUnder('write', undefined, after)).toBe('tool_changed');
    expect(withdrawalUnder('gone', 'd1', after)).toBe('tool_removed');
  });
});
