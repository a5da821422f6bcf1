import { createHash } from 'node:crypto';
import type { VersionManifest } from '@rein/contract';
import type { AgentProfile, Tool } from '@rein/define/internal';
import { canonicalJson } from './argument-hash.js';
import { toolDigest, toolDigestParts } from './tool-digest.js';

/** An agent's definition as one hash: prompt, tools, models, limits, output, policies, sub-agents. */
export function agentDigest(agent: AgentProfile): string {
  const output = agent.output?.jsonSchema ?? null;
  // Functions do not serialise: memory's approval policy counts by its source text, as a tool's does.
  const { name: _n, description: _d, output: _o, memory, ...rest } = agent;
  return createHash('sha256')
    .update(
      canonicalJson({
        ...rest,
        output,
        memory: memory ? { namespace: memory.namespace, approval: memory.approval?.toString() ?? null } : null,
      }),
    )
    .digest('hex')
    .slice(0, 32);
}

/** What a version serves (pure): its tools' and agents' digests and its MCP servers. */
export function manifestOf(
  version: string,
  agents: readonly AgentProfile[],
  tools: Iterable<Tool>,
  mcpServers: readonly string[],
  at: string,
): VersionManifest {
  return {
    version,
    registeredAt: at,
    tools: Object.fromEntries(
      [...tools].map((t) => [
        t.name,
        { digest: toolDigest(t), kind: t.kind, roles: t.allowedRoles ? [...t.allowedRoles] : null, parts: toolDigestParts(t) },
      ]),
    ),
    agents: Object.fromEntries(agents.map((a) => [a.name, { digest: agentDigest(a), tools: [...a.tools] }])),
    mcpServers: [...mcpServers].sort(),
  };
}

/** Names added, removed and changed (by digest) from `before` to `after`. */
export function changedNames(before: Record<string, { digest: string }>, after: Record<string, { digest: string }>) {
  const names = (r: Record<string, unknown>) => Object.keys(r).sort();
  return {
    added: names(after).filter((n) => !(n in before)),
    removed: names(before).filter((n) => !(n in after)),
    changed: names(before).filter((n) => n in after && before[n]?.digest !== after[n]?.digest),
  };
}

/** A withdrawal's difference: which parts of the tool differ between the definition the approval was asked under and `after`'s. */
export type ToolDifference = 'removed' | 'kind' | 'schema' | 'roles' | 'policy' | 'asked_under_another_definition';

/**
 * What changed in `tool` for an approval asked under `digest` (pure): `removed` when
 * `after` has no such tool; the parts (kind, argument schema, roles, approval policy) that
 * differ when `before` is the definition it was asked under; `asked_under_another_definition`
 * when the approval's digest is neither side's (asked on a third version) or a manifest
 * predates the parts.
 */
export function toolDifference(
  tool: string,
  digest: string | undefined,
  before: VersionManifest,
  after: VersionManifest,
): ToolDifference[] {
  const now = after.tools[tool];
  if (!now) return ['removed'];
  const then = before.tools[tool];
  if (!then || digest === undefined || then.digest !== digest || !then.parts || !now.parts) return ['asked_under_another_definition'];
  const out: ToolDifference[] = [];
  if (then.kind !== now.kind) out.push('kind');
  for (const part of ['schema', 'roles', 'policy'] as const) if (then.parts[part] !== now.parts[part]) out.push(part);
  return out.length ? out : ['asked_under_another_definition'];
}

/** Why an approval asked under `digest` for `tool` would be withdrawn in `after`, or null when it stays. */
export function withdrawalUnder(tool: string, digest: string | undefined, after: VersionManifest): 'tool_changed' | 'tool_removed' | null {
  const now = after.tools[tool];
  if (!now) return 'tool_removed';
  return digest === undefined || digest !== now.digest ? 'tool_changed' : null;
}
