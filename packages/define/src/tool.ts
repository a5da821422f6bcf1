import {
  type ApprovalContext,
  approvalContextSchema,
  type Escalation,
  escalationSchema,
  type Principal,
  type Risk,
  type Role,
  roleSchema,
  type TenantRole,
} from '@rein/contract';
import { z } from 'zod';
import { ConfigError, ToolError } from './errors.js';
import { zodSchemaProblem } from './zod-schema.js';

type LogFn = { (obj: object, msg?: string): void; (msg: string): void };

/** What a tool logs through: the part of a pino logger tools use (Rein passes its own, bound to the call). */
export interface ToolLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

/** Trusted context a tool runs with: identity from the run record, never from the model (I8). */
export interface ToolContext extends Principal {
  runId: string;
  /** The agent whose run calls the tool (Rein always sets it; optional so that a test may build a context without it). */
  agent?: string;
  step: number;
  toolCallId: string;
  /** `run:step:toolCallId`; write tools de-duplicate on it (I4). */
  idempotencyKey: string;
  signal: AbortSignal;
  /** Bound to the run and step; PII in what it logs is masked. */
  logger: ToolLogger;
  /** A write call's entry in the effect ledger (Rein sets it for write tools): absent for reads. */
  effect?: EffectHandle;
}

/**
 * For a write tool that starts work elsewhere and waits for it (a remote task, a job): it
 * remembers the work's handle before waiting, so a call cut off by a crash finds that work
 * again instead of starting it twice.
 */
export interface EffectHandle {
  /** An earlier attempt of this very call was cut off (a worker stopped mid-call). */
  readonly resumed: boolean;
  /** What that attempt remembered, if it got that far. */
  readonly remembered?: string;
  /** Remembers the handle; false when the run has finished meanwhile (stop the work: nobody waits for it). */
  remember(handle: string): Promise<boolean>;
  /** A person's reply to the question the call asked last (ToolNeedsInputError), when it runs again after it. */
  readonly reply?: InputReply;
}

/**
 * What a person made of a call's question (round `round`, approval `approvalId`): an answer
 * (the approved arguments, as the tool's parameters parse them), or none and why (rejected,
 * expired, withdrawn). Either way the call goes on from where it asked.
 */
export type InputReply =
  | { round: number; approvalId: string; answered: true; args: unknown }
  | { round: number; approvalId: string; answered: false; why: string };

/**
 * What a write tool throws when the work it started waits for a person's input: the step
 * parks on an approval of kind `input` for the same call (its summary the question, its
 * arguments the answer to send, `proposed` until an approver edits them), and the call
 * runs again with the reply (`EffectHandle.reply`). Its ledger entry stays an intent, so
 * what it remembered is read again. `round`: this question's number (1 for the first).
 */
export class ToolNeedsInputError extends ToolError {
  override readonly name = 'ToolNeedsInputError';
  constructor(
    readonly round: number,
    readonly requirement: ApprovalRequirement,
    readonly proposed: unknown,
  ) {
    super('tool_needs_input', requirement.summary);
  }
}

/** What an approval policy asks for; `null` means the call needs no approval. */
export interface ApprovalRequirement {
  risk: Risk;
  requiredRole: TenantRole;
  summary: string;
  /** Distinct people (never the requester) who must approve (n ≥ 2); absent: one decides. */
  quorum?: number;
  /** Undecided after `afterMs`, `requiredRole` becomes `toRole` (never lower). */
  escalate?: Escalation;
  /** Short fields shown to approvers beside the summary (the customer, the amount); never secrets. */
  context?: ApprovalContext;
}

/** A tool as the runtime holds it: `defineTool`'s value, with its defaults filled in. */
export interface Tool<A = unknown> {
  name: string;
  /** Written for the model: when to call it and what it returns. */
  description: string;
  kind: 'read' | 'write';
  parameters: z.ZodType<A>;
  /** Roles allowed to cause this call; checked at execution, every time (I7). */
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
  /** The arguments' JSON Schema when `parameters` cannot produce it (MCP tools bring the server's own). */
  jsonSchema?: Record<string, unknown>;
  approval(args: A, ctx: Omit<ToolContext, 'signal' | 'logger'>): ApprovalRequirement | null;
  /** The approval policy's source text as written (defineTool wraps it): part of the tool's digest (core's tools/tool-digest.ts). */
  policySource?: string;
  execute(args: A, ctx: ToolContext): Promise<unknown>;
  /**
   * Undoes a completed call (saga compensation): gets the call's arguments and result
   * (its JSON, parsed). Runs at most once per call, through the effect ledger with a key of its own.
   */
  compensate?(args: A, result: unknown, ctx: ToolContext): Promise<unknown>;
  /** For tools Rein cannot give code to (MCP): the tool of the same app that undoes a call, and its arguments. */
  compensateWith?: CompensateWith;
}

/** The tool that undoes a call, and how its arguments are built from the call's arguments and result. */
export interface CompensateWith {
  tool: string;
  args: (args: unknown, result: unknown) => Record<string, unknown>;
}

/** What a user writes: `approval` may leave out the role (an `approver` decides) or be absent (no approval). */
export interface ToolDefinition<S extends z.ZodType> {
  name: string;
  description: string;
  kind: 'read' | 'write';
  parameters: S;
  approval?: (
    args: z.infer<S>,
    ctx: Omit<ToolContext, 'signal' | 'logger'>,
  ) => { risk: Risk; summary: string; requiredRole?: TenantRole; quorum?: number; escalate?: Escalation; context?: ApprovalContext } | null;
  allowedRoles?: readonly Role[];
  /** Say `true` only if `execute` de-duplicates on `ctx.idempotencyKey`: then a call cut off by a crash is re-run. */
  honoursIdempotencyKey?: boolean;
  timeoutMs?: number;
  policyVersion?: number;
  approvalTtlMs?: number;
  execute(args: z.infer<S>, ctx: ToolContext): unknown;
  /** Write tools only: undoes a completed call when its run fails, is cancelled, or an approver asks; should de-duplicate on `ctx.idempotencyKey`. */
  compensate?: (args: z.infer<S>, result: unknown, ctx: ToolContext) => unknown;
  compensateWith?: CompensateWith;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', 'must be a function');

/**
 * What the runtime relies on in a tool: the shape `defineTool` returns. Apps are checked
 * against it at start (a hand-built `{name}` would otherwise fail every step).
 */
export const toolValueSchema = z.looseObject({
  name: z.string().regex(TOOL_NAME, '1-64 letters, digits, "_" or "-"'),
  description: z.string().min(1),
  kind: z.enum(['read', 'write']),
  // Duck-typed: the app may bring its own copy of zod.
  parameters: z.custom((v) => typeof (v as { safeParse?: unknown } | null)?.safeParse === 'function', 'must be a zod schema'),
  honoursIdempotencyKey: z.boolean(),
  approval: fn,
  execute: fn,
  compensate: fn.optional(),
});

/**
 * A tool of an app: typed by its zod `parameters`, checked here (name, schema), so a
 * bad definition fails the process at start with the tool's name in the message.
 */
export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): Tool {
  const where = `tool "${def.name}"`;
  if (typeof def.name !== 'string' || !TOOL_NAME.test(def.name)) {
    throw new ConfigError(`${where}: a tool name is 1-64 letters, digits, "_" or "-" (the model API's rule)`);
  }
  if (!def.description?.trim()) throw new ConfigError(`${where}: description is required (the model reads it)`);
  if (def.kind !== 'read' && def.kind !== 'write') throw new ConfigError(`${where}: kind must be "read" or "write"`);
  if (typeof def.execute !== 'function') throw new ConfigError(`${where}: execute must be a function`);
  const problem = zodSchemaProblem(def.parameters);
  if (problem) throw new ConfigError(`${where}: parameters ${problem}`);
  let schema: Record<string, unknown>;
  try {
    schema = z.toJSONSchema(def.parameters) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`${where}: parameters cannot be sent to a model as JSON Schema (${(err as Error).message})`);
  }
  if (schema.type !== 'object') throw new ConfigError(`${where}: parameters must be a z.object(...) (the model sends named arguments)`);
  for (const role of def.allowedRoles ?? []) {
    if (!roleSchema.safeParse(role).success) throw new ConfigError(`${where}: unknown role "${role}" in allowedRoles`);
  }
  if ((def.compensate || def.compensateWith) && def.kind !== 'write')
    throw new ConfigError(`${where}: only a write tool can be compensated`);
  if (def.compensate && def.compensateWith) throw new ConfigError(`${where}: declare compensate or compensateWith, not both`);
  const approval = def.approval;
  const compensate = def.compensate;
  return {
    name: def.name,
    description: def.description,
    kind: def.kind,
    parameters: def.parameters,
    honoursIdempotencyKey: def.honoursIdempotencyKey ?? false,
    ...(def.allowedRoles ? { allowedRoles: def.allowedRoles } : {}),
    ...(def.timeoutMs !== undefined ? { timeoutMs: def.timeoutMs } : {}),
    ...(def.policyVersion !== undefined ? { policyVersion: def.policyVersion } : {}),
    ...(def.approvalTtlMs !== undefined ? { approvalTtlMs: def.approvalTtlMs } : {}),
    policySource: approval ? approval.toString() : '',
    approval: (args, ctx) => {
      const wanted = approval?.(args as z.infer<S>, ctx);
      if (!wanted) return null;
      const { risk, summary, requiredRole = 'approver', quorum, escalate, context } = wanted;
      return {
        risk,
        summary,
        requiredRole,
        ...(quorum !== undefined ? { quorum } : {}),
        ...(escalate ? { escalate } : {}),
        ...(context ? { context } : {}),
      };
    },
    execute: async (args, ctx) => def.execute(args as z.infer<S>, ctx),
    ...(compensate
      ? { compensate: async (args: unknown, result: unknown, ctx: ToolContext) => compensate(args as z.infer<S>, result, ctx) }
      : {}),
    ...(def.compensateWith ? { compensateWith: def.compensateWith } : {}),
  };
}

/** The breaker and bulkhead a tool's calls go through. */
export const toolDependency = (tool: Pick<Tool, 'name' | 'dependency'>) => tool.dependency ?? `tool:${tool.name}`;

/** The tool `name` if the agent may call it: a model asking for any other gets no tool. */
export const agentTool = (tools: ReadonlyMap<string, Tool>, agent: { tools: readonly string[] }, name: string): Tool | undefined =>
  agent.tools.includes(name) ? tools.get(name) : undefined;

/** The OpenAI `tools` entry for a tool: its description and JSON Schema arguments. */
export function toolSpec(tool: Tool) {
  const { $schema: _ignored, ...parameters } = tool.jsonSchema ?? (z.toJSONSchema(tool.parameters) as Record<string, unknown>);
  return { type: 'function' as const, function: { name: tool.name, description: tool.description, parameters } };
}

/** What was thrown, as text: tools and policies may throw anything, not only Errors. */
export const thrownMessage = (err: unknown): string =>
  err instanceof Error ? err.message : typeof err === 'string' ? err : 'a non-Error value was thrown';

/**
 * The tool's approval policy applied to a call. App code may throw: that is a ToolError
 * (`approval_policy_failed`, not retryable) the caller turns into an observation, never a
 * crash of the step that would be retried until the deadline.
 */
export function requirementOf(tool: Tool, args: unknown, ctx: Omit<ToolContext, 'signal' | 'logger'>): ApprovalRequirement | null {
  let wanted: ApprovalRequirement | null;
  try {
    wanted = tool.approval(args, ctx);
  } catch (err) {
    throw new ToolError('approval_policy_failed', `the approval policy of ${tool.name} failed: ${thrownMessage(err)}`, { cause: err });
  }
  // A quorum or an escalation the approval could not hold is the policy's bug: refused like a throw.
  const problem = wanted && governanceProblem(wanted);
  if (problem) throw new ToolError('approval_policy_failed', `the approval policy of ${tool.name} failed: ${problem}`);
  return wanted;
}

function governanceProblem(r: ApprovalRequirement): string | undefined {
  if (r.quorum !== undefined && !(Number.isInteger(r.quorum) && r.quorum >= 2 && r.quorum <= MAX_QUORUM))
    return `quorum must be an integer from 2 to ${MAX_QUORUM}, got ${String(r.quorum)}`;
  if (r.escalate !== undefined && !escalationSchema.safeParse(r.escalate).success)
    return 'escalate must be {afterMs: a positive integer, toRole: a role}';
  if (r.context !== undefined && !approvalContextSchema.safeParse(r.context).success)
    return 'context must be at most 20 fields of short strings, numbers or booleans';
  return undefined;
}

/** More distinct approvers than any team has: a typo, not a policy. */
export const MAX_QUORUM = 20;

/**
 * A tool's result as observation text: a string as it is, anything else as JSON. A value
 * with no JSON form (a function, a Symbol, a `toJSON` returning undefined, a BigInt, a
 * cycle) is a ToolError (`tool_result_invalid`): the call is answered with an error at once.
 */
export function resultText(tool: Pick<Tool, 'name'>, value: unknown): string {
  if (typeof value === 'string') return value;
  let text: string | undefined;
  try {
    text = JSON.stringify(value ?? null);
  } catch (err) {
    throw new ToolError('tool_result_invalid', `${tool.name} returned a result that cannot be sent as JSON (${thrownMessage(err)})`);
  }
  if (typeof text !== 'string')
    throw new ToolError('tool_result_invalid', `${tool.name} returned a ${typeof value}, which has no JSON form`);
  return text;
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
  const parsed = tool.parameters.safeParse(json);
  if (parsed.success) return { ok: true, args: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return { ok: false, problem: `arguments do not match the schema of ${tool.name}: ${issues}` };
}
