import type { VersionManifest } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { changedNames, toolDifference, withdrawalUnder } from '../src/policy/app/version-manifest.js';

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

  it('name what differs in a withdrawn approval’s tool: the parts that changed, or that it is gone', () => {
    const parts = { schema: 's1', roles: 'r1', policy: 'p1' };
    const withParts = (digest: string, p: typeof parts, kind = 'write'): VersionManifest => ({
      ...manifest({}),
      tools: { write: { digest, kind, roles: null, parts: p } },
    });
    const before = withParts('d1', parts);
    expect(toolDifference('write', 'd1', before, withParts('d2', { ...parts, policy: 'p2' }))).toEqual(['policy']);
    expect(toolDifference('write', 'd1', before, withParts('d2', { ...parts, schema: 's2', roles: 'r2' }))).toEqual(['schema', 'roles']);
    expect(toolDifference('write', 'd1', before, withParts('d2', parts, 'read'))).toEqual(['kind']);
    expect(toolDifference('gone', 'd1', before, withParts('d2', parts))).toEqual(['removed']);
    // Asked on a third version, or a manifest registered before the parts were kept: said so, not guessed.
    expect(toolDifference('write', 'd0', before, withParts('d2', { ...parts, policy: 'p2' }))).toEqual(['asked_under_another_definition']);
    expect(toolDifference('write', 'd1', manifest({ write: 'd1' }), withParts('d2', parts))).toEqual(['asked_under_another_definition']);
  });
});
