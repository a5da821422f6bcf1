import { z } from 'zod';
import { A2A_TERMINAL, type A2aTask } from '../policy/a2a/a2a-task.js';
import { NotFoundError, ReinError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';

/** A2A's JSON-RPC error codes (the spec's, and JSON-RPC's own); v0.3 and 1.0 share them. */
export const RPC = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** Implementation-defined: a Rein rule refused (403, 409, 410, 429 …); `data.code` says which. */
  refused: -32000,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  unsupportedOperation: -32004,
  extendedCardNotConfigured: -32007,
  versionNotSupported: -32009,
} as const;

export type RpcId = string | number | null;
export interface RpcFailure {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** A Rein error as a JSON-RPC error: its stable code and status travel in `data`. `method` is the 1.0 name. */
export function rpcError(err: unknown, method: string, logger: Logger): RpcFailure {
  if (err instanceof RpcError) return { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) };
  if (!(err instanceof ReinError) || err.status >= 500) {
    logger.error({ err, method }, 'a2a call failed');
    return { code: RPC.internal, message: 'internal error' };
  }
  const data = { code: err.code, status: err.status };
  if (err.status === 404) return { code: RPC.taskNotFound, message: err.message, data };
  if (err.code === 'run_finished' && method === 'CancelTask') return { code: RPC.taskNotCancelable, message: err.message, data };
  if (err.status === 400 || err.status === 422) return { code: RPC.invalidParams, message: err.message, data };
  return { code: RPC.refused, message: err.message, data };
}

/** Params checked against a 1.0 schema: anything else is `invalid params`, saying where. */
export const rpcParams = <T>(schema: z.ZodType<T>, value: unknown): T => {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  throw new RpcError(
    RPC.invalidParams,
    `invalid params: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'params'}: ${i.message}`).join('; ')}`,
  );
};

/** A task to subscribe to: a finished one has nothing more to tell (`UnsupportedOperation`). */
export function followable(task: A2aTask): A2aTask {
  if (A2A_TERMINAL.includes(task.status.state))
    throw new RpcError(RPC.unsupportedOperation, `task ${task.id} is already ${task.status.state}`);
  return task;
}

const agentParams = z.object({ agent: z.string().min(1).max(64) });

/** The agent a path names: a name no agent can have is not found, as an unknown one is (a caller's miss, not our fault). */
export function agentOf(params: unknown): string {
  const parsed = agentParams.safeParse(params);
  if (!parsed.success) throw new NotFoundError('agent');
  return parsed.data.agent;
}

export const success = (id: RpcId, result: unknown) => ({ jsonrpc: '2.0' as const, id, result });
export const failure = (id: RpcId, error: RpcFailure) => ({ jsonrpc: '2.0' as const, id, error });
