import { createHash } from 'node:crypto';
import type { Tool } from '@rein/define/internal';
import { z } from 'zod';
import { canonicalJson } from './argument-hash.js';

/**
 * What an approver saw of a tool, as one hash: its name, kind, argument schema (JSON
 * Schema), roles and approval policy (its version and its source text). An approval
 * records it; when its run moves to another app version, the approval is kept only if
 * the new version's tool has the same digest (engine/version-route.ts).
 */
export function toolDigest(tool: Tool): string {
  const known = digests.get(tool);
  if (known) return known;
  const schema = toolJsonSchema(tool);
  const digest = createHash('sha256')
    .update(
      canonicalJson({
        name: tool.name,
        kind: tool.kind,
        schema,
        roles: tool.allowedRoles ?? null,
        policyVersion: tool.policyVersion ?? 1,
        policy: tool.policySource ?? tool.approval.toString(),
      }),
    )
    .digest('hex')
    .slice(0, 32);
  digests.set(tool, digest);
  return digest;
}

/** What a tool's digest covers, each part hashed apart: what a deploy's impact check names as the difference. */
export function toolDigestParts(tool: Tool): { schema: string; roles: string; policy: string } {
  const h = (v: unknown) => createHash('sha256').update(canonicalJson(v)).digest('hex').slice(0, 16);
  return {
    schema: h(toolJsonSchema(tool)),
    roles: h(tool.allowedRoles ?? null),
    policy: h({ policyVersion: tool.policyVersion ?? 1, policy: tool.policySource ?? tool.approval.toString() }),
  };
}

/** A tool's arguments as JSON Schema (an MCP tool's own, else its zod schema's), without the dialect. */
export function toolJsonSchema(tool: Tool): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = tool.jsonSchema ?? (z.toJSONSchema(tool.parameters) as Record<string, unknown>);
  return schema;
}

/** Tools are values built once per process: each is hashed once. */
const digests = new WeakMap<Tool, string>();
