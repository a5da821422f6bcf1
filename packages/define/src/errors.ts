/**
 * One error hierarchy for Rein. `code` is stable (clients and tests match on it);
 * `retryable` is decided where the error is thrown, and only the worker boundary turns
 * a non-retryable error into BullMQ's UnrecoverableError.
 */
export class ReinError extends Error {
  override readonly name: string = 'ReinError';
  readonly code: string;
  readonly retryable: boolean;
  readonly status: number;
  /** For retryable errors: when trying again makes sense (Retry-After, breaker reset), if known. */
  readonly retryAfterMs: number | undefined;

  constructor(code: string, message: string, opts: { retryable?: boolean; status?: number; cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, { cause: opts.cause });
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.status = opts.status ?? 500;
    this.retryAfterMs = opts.retryAfterMs;
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/** The caller sent something we will not accept (bad body, unknown agent, …). */
export class InvalidRequestError extends ReinError {
  override readonly name = 'InvalidRequestError';
  constructor(message: string, code = 'invalid_request') {
    super(code, message, { status: 400 });
  }
}

/**
 * What a tool throws when it fails in a way the model should hear about: `code` is
 * stable, `retryable` says whether calling again (same or other arguments) can help.
 */
export class ToolError extends ReinError {
  override readonly name: string = 'ToolError';
  constructor(code: string, message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(code, message, { retryable: opts.retryable ?? false, cause: opts.cause });
  }
}

/**
 * A tool cannot tell whether its effect happened (the link to the system it writes to
 * broke after the request left). A write throwing it is recorded `uncertain`, as if
 * its worker had died mid-call, never as a failure the model would try again. It is
 * retryable as a read is (and counts against the dependency's breaker); the executor
 * and the compensator take a write's out before they look at that.
 */
export class ToolOutcomeUnknownError extends ToolError {
  override readonly name: string = 'ToolOutcomeUnknownError';
  constructor(message: string, cause?: unknown) {
    super('tool_outcome_unknown', message, { retryable: true, cause });
  }
}

/** Operator misconfiguration: a bad environment variable, a missing agent profile. */
export class ConfigError extends ReinError {
  override readonly name = 'ConfigError';
  constructor(message: string) {
    super('config_invalid', message);
  }
}
