import { riskSchema, tenantRoleSchema } from '@rein/contract';
import { z } from 'zod';

/** How an app may override what a server's annotations say about one of its tools. */
export const mcpToolOverrideSchema = z.strictObject({
  kind: z.enum(['read', 'write']).optional(),
  /** Risk and deciding role of a write tool's approval (defaults from `destructiveHint`). */
  approval: z.strictObject({ risk: riskSchema.optional(), requiredRole: tenantRoleSchema.optional() }).optional(),
  /**
   * The app vouches that the server de-duplicates on `_meta["rein/idempotencyKey"]`: with
   * the server's `idempotentHint`, a call cut off by a crash is sent again instead of
   * being reported uncertain.
   */
  idempotent: z.boolean().optional(),
  /**
   * Saga compensation for a write tool: the app tool (by its Rein name, e.g.
   * `crm__delete_call`) that undoes a call, and its arguments from the call's arguments and result.
   */
  compensateWith: z
    .strictObject({
      tool: z.string().min(1),
      args: z.custom<(args: unknown, result: unknown) => Record<string, unknown>>(
        (v) => typeof v === 'function',
        'a function (args, result) => arguments',
      ),
    })
    .optional(),
});
export type McpToolOverride = z.infer<typeof mcpToolOverrideSchema>;

const serverOptions = {
  /** If it cannot start, its tools are absent (and `rein_mcp_server_up` says so) instead of a startup error. */
  optional: z.boolean().optional(),
  /** Longest the server may take to answer `initialize` and list its tools (default 30 s); past it, it is stopped. */
  startTimeoutMs: z.number().int().positive().optional(),
  /** Longest one call may take (default REIN_TOOL_TIMEOUT_MS). */
  timeoutMs: z.number().int().positive().optional(),
  /**
   * `false`: the server's annotations (`readOnlyHint`, `destructiveHint`, `idempotentHint`)
   * are ignored, so every tool is a critical write behind an approval unless `tools` says
   * otherwise. Default `true`: one hint of a third-party server can lift the approval.
   */
  trustAnnotations: z.boolean().optional(),
  /** Per-tool overrides, by the tool's name on the server. */
  tools: z.record(z.string(), mcpToolOverrideSchema).optional(),
};

export const mcpStdioServerSchema = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  ...serverOptions,
});

export const mcpHttpServerSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), z.string()).optional(),
  ...serverOptions,
});

export const mcpServerSchema = z.union([mcpStdioServerSchema, mcpHttpServerSchema]);
export type McpServerConfig = z.infer<typeof mcpServerSchema>;

/** Server names prefix tool names (`<server>__<tool>`), so they keep to the model API's characters and hold no `__`. */
export const MCP_SERVER_NAME = /^[a-zA-Z0-9-]+(?:_[a-zA-Z0-9-]+)*$/;

export const mcpServersSchema = z.record(
  z.string().max(32).regex(MCP_SERVER_NAME, 'letters, digits, "-" and single "_" only (the tool names are <server>__<tool>)'),
  mcpServerSchema,
);
export type McpServers = z.infer<typeof mcpServersSchema>;
