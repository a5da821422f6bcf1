import { ReinApiError, ReinClient } from '@rein/client';

/** The API's error answers, as `@rein/client` reads them (branch on `code`). */
export { ReinApiError as ApiError };

/** The console's way to the server: `@rein/client` on the page's own origin, with the signed-in key. */
export interface Api {
  client: ReinClient;
  /** A route the client does not cover (the console's settings): same key, same error answers. */
  raw<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T>;
}

export function createApi(key: string): Api {
  const origin = location.origin;
  return {
    client: new ReinClient({ apiUrl: origin, approverUrl: origin, apiKey: key }),
    async raw<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
      const res = await fetch(path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!res.ok) throw await ReinApiError.from(res);
      const text = await res.text();
      return (text ? JSON.parse(text) : undefined) as T;
    },
  };
}

/** Calls `onEvent` for each event of a live stream until it ends or `signal` aborts; a refused stream just ends. */
export async function follow(stream: AsyncIterable<unknown>, onEvent: () => void): Promise<void> {
  try {
    for await (const _ of stream) onEvent();
  } catch (err) {
    if (!(err instanceof ReinApiError) && (err as Error).name !== 'AbortError') throw err;
  }
}
