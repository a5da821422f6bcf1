import type { ReinErrorCode } from '@rein/contract';

/** An error answer of the API, `{"error":{"code","message"}}`: branch on `code`, never on `message`. */
export class ReinApiError extends Error {
  override readonly name = 'ReinApiError';

  constructor(
    readonly status: number,
    readonly code: ReinErrorCode,
    message: string,
  ) {
    super(message);
    Object.setPrototypeOf(this, new.target.prototype);
  }

  /** The error a response carries; a body that is not Rein's envelope (a proxy's page) becomes `http_<status>`. */
  static async from(res: Response): Promise<ReinApiError> {
    const text = await res.text().catch(() => '');
    try {
      const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
      if (typeof error?.code === 'string' && typeof error.message === 'string')
        return new ReinApiError(res.status, error.code, error.message);
    } catch {
      // not JSON: fall through
    }
    return new ReinApiError(res.status, `http_${res.status}`, text.slice(0, 200) || res.statusText);
  }
}

/**
 * No HTTP answer at all from `url`: nothing listens there, DNS failed, the connection was
 * refused or dropped. `cause` is what `fetch` threw.
 */
export class ReinNetworkError extends Error {
  override readonly name = 'ReinNetworkError';
  readonly code = 'network_error';

  constructor(
    readonly url: string,
    override readonly cause: unknown,
  ) {
    const detail = (cause as { cause?: { code?: unknown } } | undefined)?.cause?.code;
    super(`no answer from ${url}${typeof detail === 'string' ? ` (${detail})` : ''}`);
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/** `runs.wait` gave up: the run was neither finished nor parked in time. */
export class ReinWaitTimeoutError extends Error {
  override readonly name = 'ReinWaitTimeoutError';
  readonly code = 'wait_timeout';

  constructor(
    readonly runId: string,
    readonly timeoutMs: number,
  ) {
    super(`run ${runId} neither finished nor parked within ${timeoutMs} ms`);
    Object.setPrototypeOf(this, new.target.prototype);
  }
}
