import { z } from 'zod';
import type { Risk } from '../schemas/approval.js';
import type { Principal, Role } from '../schemas/identity.js';

/** Trusted context a tool runs with: identity from the run record, never from the model (invariant 8). */
export interface ToolContext extends Principal {
  runId: string;
  step: number;
  toolCallId: string;
  /** `run:step:toolCallId`; write tools de-duplicate on it (invariant 4). */
  idempotencyKey: string;
  signal: AbortSignal;
}

/** What an approval policy asks for; `null` means the call needs no approval. */
export interface ApprovalRequirement {
  risk: Risk;
  requiredRole: Role;
  summary: string;
}

export interface Tool<A = unknown> {
  name: string;
  /** Written for the model: when to call it and what it returns. */
  description: string;
  kind: 'read' | 'write';
  args: z.ZodType<A>;
  /** Roles allowed to cause this call; checked at execution, every time (invariant 7). */
  allowedRoles?: readonly Role[];
  /** Whether re-running with the same idempotency key is safe after a crash mid-call. */
  honoursIdempotencyKey: boolean;
  /** Bumped whenever `approval` changes; approvals judged by an older policy are refused. */
  policyVersion?: number;
  /** How long an approval of this tool stays decidable (default APPROVAL_TTL_MS). */
  approvalTtlMs?: number;
  /** Longest one call may take (default REIN_TOOL_TIMEOUT_MS); never past the run's deadline. */
  timeoutMs?: number;
  /** The breaker and bulkhead it shares (default `tool:<name>`); an MCP server's tools share `mcp:<server>`. */
  dependency?: string;
  /** The arguments' JSON Schema when `args` cannot produce it (MCP tools bring the server's own). */
  jsonSchema?: Record<string, unknown>;
  approval(args: A, ctx: Omit<ToolContext, 'signal'>): ApprovalRequirement | null;
  execute(args: A, ctx: ToolContext): Promise<unknown>;
}

/** Keeps tool definitions typed by their argument schema while storing them side by side. */
export function defineTool<S extends z.ZodType>(tool: Tool<z.infer<S>> & { args: S }): Tool {
  return tool as unknown as Tool;
}

/** The OpenAI `tools` entry for a tool: its description and JSON Schema arguments. */
export function toolSpec(tool: Tool) {
  const { $schema: _ignored, ...parameters } = tool.jsonSchema ?? (z.toJSONSchema(tool.args) as Record<string, unknown>);
  return { type: 'function' as const, function: { name: tool.name, description: tool.description, parameters } };
}

export type ParsedArgs = { ok: true; args: unknown } | { ok: false; problem: string };

/** Model-written argument text → validated arguments, or a message the model can act on. */
export function parseToolArguments(tool: Tool, raw: string): ParsedArgs {
  let json: unknown;
  try {
    json = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch (err) {
    return { ok: false, problem: `arguments are not valid JSON (${(err as Error).message}); send a JSON object` };
  }
  const parsed = tool.args.safeParse(json);
  if (parsed.success) return { ok: true, args: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return { ok: false, problem: `arguments do not match the schema of ${tool.name}: ${issues}` };
}
