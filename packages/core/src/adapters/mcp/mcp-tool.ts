import type { Tool as McpToolDefinition } from '@modelcontextprotocol/sdk/types.js';
import type { McpToolOverride, Tool } from '@rein/define/internal';
import type { ValidateFunction } from 'ajv';
import { z } from 'zod';
import { canonicalJson, hashArguments } from '../../policy/app/argument-hash.js';
import { mcpGovernance } from './mcp-governance.js';
import { mcpObservation } from './mcp-result.js';
import { mcpToolName } from './mcp-tool-name.js';

/** Sends one `tools/call` to the tool's server; the key travels in the request's `_meta`. */
export type McpCall = (
  tool: string,
  args: Record<string, unknown>,
  opts: { signal: AbortSignal; idempotencyKey: string },
) => Promise<Parameters<typeof mcpObservation>[0]>;

export interface McpToolOptions {
  server: string;
  override?: McpToolOverride | undefined;
  /** Whether the server's annotations may loosen governance (its `trustAnnotations`, default true). */
  trustAnnotations?: boolean | undefined;
  timeoutMs?: number | undefined;
  /** The tool's input schema, compiled (ajv). */
  validate: ValidateFunction;
  call: McpCall;
}

const SUMMARY_MAX = 300;

/**
 * An MCP server's tool as a Rein tool, governed like a native one: arguments checked
 * against the server's JSON Schema before anything runs, approvals and idempotency
 * from its annotations (see mcpGovernance), guarded by the server's breaker and
 * bulkhead (`mcp:<server>`), and its result turned into an observation.
 */
export function createMcpTool(def: McpToolDefinition, opts: McpToolOptions): Tool {
  const trust = opts.trustAnnotations ?? true;
  const governance = mcpGovernance(def.annotations, opts.override, trust);
  const { $schema: _dialect, ...jsonSchema } = def.inputSchema as Record<string, unknown>;
  // A Rein tool's parameters are a zod schema: this one defers to the compiled JSON Schema.
  const parameters = z.unknown().superRefine((value, ctx) => {
    if (opts.validate(value)) return;
    for (const e of opts.validate.errors ?? []) {
      const path = e.instancePath.split('/').slice(1);
      ctx.addIssue({ code: 'custom', message: e.message ?? 'invalid', path });
    }
  });
  return {
    name: mcpToolName(opts.server, def.name),
    description: def.description ?? def.title ?? `${def.name} (from MCP server ${opts.server})`,
    kind: governance.kind,
    parameters,
    jsonSchema,
    dependency: `mcp:${opts.server}`,
    honoursIdempotencyKey: governance.honoursIdempotencyKey,
    // A changed definition (schema, annotations, override) voids approvals granted under the old one.
    policyVersion:
      1 +
      Number.parseInt(
        hashArguments({ jsonSchema, annotations: def.annotations, override: opts.override, ...(trust ? {} : { trust }) }).slice(0, 7),
        16,
      ),
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(governance.kind === 'write' && opts.override?.compensateWith ? { compensateWith: opts.override.compensateWith } : {}),
    approval: (callArgs) => {
      if (!governance.approval) return null;
      const shown = canonicalJson(callArgs);
      const summary = `${def.title ?? def.name} on MCP server ${opts.server}: ${shown.length > SUMMARY_MAX ? `${shown.slice(0, SUMMARY_MAX)}…` : shown}`;
      return { ...governance.approval, summary };
    },
    execute: async (callArgs, ctx) =>
      mcpObservation(
        await opts.call(def.name, callArgs as Record<string, unknown>, { signal: ctx.signal, idempotencyKey: ctx.idempotencyKey }),
      ),
  };
}
