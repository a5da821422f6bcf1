import { ReinApiError } from './rein-api-error.js';
import { readSse } from './sse-reader.js';

/** One event of a stream, with its position: pass `id` as `lastEventId` to resume after it. */
export interface StreamedEvent<T> {
  id: string;
  event: T;
}

export interface StreamOptions {
  /** Resume after this event (its `id`); from the start when omitted. */
  lastEventId?: string;
  /** Ends the iteration (and the connection). */
  signal?: AbortSignal;
}

export interface ReconnectPolicy {
  /** Pause before reconnecting (doubles per consecutive failure, up to 5 s). */
  retryDelayMs: number;
  /** Consecutive failed connections (no event in between) before giving up with the last error. */
  maxRetries: number;
}

/** Whether Redis stream id `a` ("ms-seq") comes after `b`. */
function after(a: string, b: string): boolean {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am !== bm ? am > bm : as > bs;
}

/** A 5xx while connecting: try again. */
class RetryableStreamError extends Error {
  constructor(override readonly cause: ReinApiError) {
    super(cause.message);
  }
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/**
 * An SSE endpoint as an async iterator that survives dropped connections: it reconnects
 * with `Last-Event-ID` set to the last event it yielded, so the server resumes right
 * after it — nothing lost — and skips anything at or before it — nothing repeated.
 * Error answers (4xx) end it with a `ReinApiError`; 5xx and network failures are retried.
 */
export async function* reconnectingStream<T>(
  open: (lastEventId: string | undefined, signal: AbortSignal) => Promise<Response>,
  parse: (data: unknown) => T,
  isLast: (event: T) => boolean,
  options: StreamOptions,
  policy: ReconnectPolicy,
): AsyncGenerator<StreamedEvent<T>> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) stop.abort();
  let last = options.lastEventId;
  let failures = 0;
  try {
    while (!stop.signal.aborted) {
      try {
        const res = await open(last, stop.signal);
        if (!res.ok || !res.body) {
          const error = await ReinApiError.from(res);
          if (res.status < 500 || failures + 1 > policy.maxRetries) throw error; // a refusal: reconnecting will not help
          throw new RetryableStreamError(error);
        }
        for await (const message of readSse(res.body)) {
          if (message.id === undefined || (last !== undefined && !after(message.id, last))) continue;
          last = message.id;
          failures = 0;
          const event = parse(JSON.parse(message.data));
          yield { id: message.id, event };
          if (isLast(event)) return;
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        if (err instanceof ReinApiError) throw err;
        if (++failures > policy.maxRetries) throw err instanceof RetryableStreamError ? err.cause : err;
      }
      // The connection ended (a restart, a proxy timeout, a dropped socket): resume after `last`.
      await pause(Math.min(5_000, policy.retryDelayMs * 2 ** Math.max(0, failures - 1)), stop.signal);
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.abort();
  }
}
