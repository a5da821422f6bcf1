import type { ErrorEnvelope, RunReason } from '@rein/contract';
import { ReinError } from '@rein/define/internal';

/**
 * One error hierarchy for Rein: its base and the errors an app's definitions throw live
 * with the definition API (`@rein/define`), the server's own below.
 */
export { ConfigError, InvalidRequestError, ReinError, ToolError, ToolOutcomeUnknownError } from '@rein/define/internal';

/** The body of every error answer, `{"error":{"code","message"}}`: the HTTP shell's and the worker's `/metrics`. */
export const envelope = (code: string, message: string): ErrorEnvelope => ({ error: { code, message } });

export class UnauthorizedError extends ReinError {
  override readonly name = 'UnauthorizedError';
  constructor(message = 'missing or unknown API key') {
    super('unauthorized', message, { status: 401 });
  }
}

/** The OpenID Provider's discovery document or keys could not be read: no token can be checked, whoever sent it. */
export class IdentityProviderUnavailableError extends ReinError {
  override readonly name = 'IdentityProviderUnavailableError';
  constructor(message: string, cause?: unknown) {
    super('identity_provider_unavailable', message, { retryable: true, status: 503, cause });
  }
}

export class ForbiddenError extends ReinError {
  override readonly name = 'ForbiddenError';
  constructor(message: string) {
    super('forbidden', message, { status: 403 });
  }
}

/** Also used for another tenant's resources, so their existence does not leak. */
export class NotFoundError extends ReinError {
  override readonly name = 'NotFoundError';
  constructor(what: string) {
    super('not_found', `${what} not found`, { status: 404 });
  }
}

export class ConflictError extends ReinError {
  override readonly name = 'ConflictError';
  constructor(code: string, message: string) {
    super(code, message, { status: 409 });
  }
}

/** An Idempotency-Key sent again with a different body (IETF Idempotency-Key draft: 422). */
export class IdempotencyKeyReusedError extends ReinError {
  override readonly name = 'IdempotencyKeyReusedError';
  constructor() {
    super('idempotency_key_reused', 'this Idempotency-Key was used with a different body', { status: 422 });
  }
}

export class GoneError extends ReinError {
  override readonly name = 'GoneError';
  constructor(code: string, message: string) {
    super(code, message, { status: 410 });
  }
}

/** A user or tenant already holds as many open event streams on this process as it may (REIN_MAX_STREAMS_PER_USER / _PER_TENANT). */
export class TooManyStreamsError extends ReinError {
  override readonly name = 'TooManyStreamsError';
  constructor(limit: number, per: 'tenant' | 'user') {
    super('too_many_streams', `at most ${limit} event streams may be open per ${per}; close one and retry`, { status: 429 });
  }
}

/** The model endpoint failed or timed out; the step is retried later. */
export class ModelUnavailableError extends ReinError {
  override readonly name: string = 'ModelUnavailableError';
  constructor(message: string, cause?: unknown, retryAfterMs?: number) {
    super('model_unavailable', message, { retryable: true, status: 503, cause, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
  }
}

/**
 * The run's own deadline cut the model call before the model's timeout did: the step is
 * delayed (and the run ends) like any model trouble, but no breaker counts it, since the
 * caller's hurry says nothing of the model's health.
 */
export class ModelCallCutError extends ModelUnavailableError {
  override readonly name = 'ModelCallCutError';
}

/**
 * The run's deadline cut a tool call before the tool's own timeout did. The model hears
 * that the call ran out of time; the tool's breaker does not count it (not retryable).
 */
export class ToolCallCutError extends ReinError {
  override readonly name = 'ToolCallCutError';
  constructor(timeoutMs: number) {
    super('run_deadline', `cut at the run's deadline after ${timeoutMs} ms`);
  }
}

/** A dependency's circuit breaker is open (here or anywhere in the fleet): try later, do not spend a step. */
export class BreakerOpenError extends ReinError {
  override readonly name = 'BreakerOpenError';
  constructor(dependency: string, retryAfterMs: number) {
    super('breaker_open', `circuit breaker for ${dependency} is open`, { retryable: true, status: 503, retryAfterMs });
  }
}

/** A dependency's bulkhead (per process or fleet-wide) is full for longer than the allowed wait. */
export class BulkheadFullError extends ReinError {
  override readonly name = 'BulkheadFullError';
  constructor(
    dependency: string,
    readonly scope: 'process' | 'fleet',
  ) {
    super('bulkhead_full', `${dependency} is at its ${scope} concurrency limit`, { retryable: true, status: 503 });
  }
}

/** The model answered with something that is not a chat completion we can use. */
export class ModelReplyInvalidError extends ReinError {
  override readonly name = 'ModelReplyInvalidError';
  constructor(message: string, cause?: unknown) {
    super('model_reply_invalid', message, { retryable: true, cause });
  }
}

/** A compare-and-set commit lost: someone else already moved the run on. */
/** Redis did not answer when a process started: named with the variable that points at it. */
export class RedisUnavailableError extends ReinError {
  override readonly name = 'RedisUnavailableError';
  constructor(at: { where: string; cluster: boolean }, cause: unknown) {
    const why = (cause as Error)?.message ?? String(cause);
    super(
      'redis_unavailable',
      at.cluster
        ? `the Redis Cluster at ${at.where} (REDIS_CLUSTER_NODES) is not reachable: ${why}. Start it, or set REDIS_CLUSTER_NODES to its nodes`
        : `Redis at ${at.where} (REDIS_URL) is not reachable: ${why}. Start Redis 7 there, or set REDIS_URL to one that runs`,
      { retryable: true, status: 503, cause },
    );
  }
}

/** The run archive (PostgreSQL) did not answer: a read of an archived run, a search or usage may be tried again. */
export class ArchiveUnavailableError extends ReinError {
  override readonly name = 'ArchiveUnavailableError';
  constructor(cause: unknown) {
    // The cause (an address, a driver message) stays in the log and in exitOnStartError's line, not in an HTTP answer.
    super('archive_unavailable', 'the run archive (PostgreSQL, REIN_ARCHIVE_URL) is not reachable: try again shortly', {
      retryable: true,
      status: 503,
      cause,
    });
  }
}

/** 429: the tenant is over one of its quotas; says which and what the limit is. */
export class QuotaExceededError extends ReinError {
  override readonly name = 'QuotaExceededError';
  constructor(code: string, message: string) {
    super(code, message, { status: 429 });
  }
}

export class StaleStepError extends ReinError {
  override readonly name = 'StaleStepError';
  constructor(message: string) {
    super('stale_step', message);
  }
}

/** The model endpoint refused the request itself (4xx other than 408/429): retrying will not help. */
export class ModelRejectedError extends ReinError {
  override readonly name = 'ModelRejectedError';
  constructor(message: string, cause?: unknown) {
    super('model_rejected', message, { status: 502, cause });
  }
}

/**
 * Errors that cross the worker boundary, by class: the worker decides what to do with
 * a failed step from these, never from an error's message.
 */
export type StepFailure =
  | ModelUnavailableError
  | ModelRejectedError
  | ModelReplyInvalidError
  | BreakerOpenError
  | BulkheadFullError
  | StaleStepError;

/** A busy or broken dependency: the step waits (without spending an attempt) instead of failing. */
export function isDelaying(err: unknown): err is ModelUnavailableError | BreakerOpenError | BulkheadFullError {
  return err instanceof ModelUnavailableError || err instanceof BreakerOpenError || err instanceof BulkheadFullError;
}

/** The terminal reason of a run whose step failed for good with `err` (I9). */
export function terminalReason(err: unknown): RunReason {
  if (err instanceof ModelUnavailableError || err instanceof ModelRejectedError) return 'model_unavailable';
  if (err instanceof ModelReplyInvalidError) return 'model_reply_invalid';
  return 'internal_error';
}

/** "fetch failed: connect ECONNREFUSED …": the useful part of a network error is in its causes. */
function causeChain(err: unknown): string {
  const parts: string[] = [];
  for (let e = err; e !== undefined && parts.length < 4; e = (e as Error).cause) {
    parts.push(e instanceof Error ? e.message : String(e));
    if (!(e instanceof Error)) break;
  }
  return parts.join(': ');
}

/** An MCP server that must be there could not be started or reached when the process started. */
export class McpServerStartError extends ReinError {
  override readonly name = 'McpServerStartError';
  constructor(server: string, cause: unknown) {
    super('mcp_server_unavailable', `MCP server "${server}" could not be started: ${causeChain(cause)}`, { cause });
  }
}

/** An MCP server is disconnected right now (reconnecting): the call did not reach it, and counts against its breaker. */
export class McpUnavailableError extends ReinError {
  override readonly name = 'McpUnavailableError';
  constructor(server: string, cause?: unknown) {
    super('mcp_unavailable', `MCP server "${server}" is not connected`, { retryable: true, status: 503, cause });
  }
}

/** The MCP tool ran and reported failure (`isError`): the model sees why; the server's health is not in doubt. */
export class McpToolError extends ReinError {
  override readonly name = 'McpToolError';
  constructor(message: string) {
    super('mcp_tool_error', message);
  }
}
