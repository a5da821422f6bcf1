/** The console's one way to the server: same origin, the API key in a header, errors as the API's envelope says. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Api {
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  /** Follows a server-sent event stream (fetch, so the key travels in a header); `onEvent` gets each frame's data. */
  follow(path: string, onEvent: (data: unknown, id: string | undefined) => void, signal: AbortSignal): Promise<void>;
}

export function createApi(key: string): Api {
  const headers = (body: boolean): Record<string, string> => ({
    authorization: `Bearer ${key}`,
    ...(body ? { 'content-type': 'application/json' } : {}),
  });
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    const json = text ? (JSON.parse(text) as { error?: { code: string; message: string } }) : {};
    if (!res.ok) throw new ApiError(res.status, json.error?.code ?? 'error', json.error?.message ?? res.statusText);
    return json as T;
  }
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body ?? {}),
    async follow(path, onEvent, signal) {
      let lastId: string | undefined;
      while (!signal.aborted) {
        try {
          const res = await fetch(path, {
            headers: { ...headers(false), ...(lastId ? { 'last-event-id': lastId } : {}) },
            signal,
          });
          if (!res.ok || !res.body) throw new ApiError(res.status, 'stream', res.statusText);
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return; // the server ends a run's stream after run.finished
            buffer += value;
            const frames = buffer.split('\n\n');
            buffer = frames.pop() ?? '';
            for (const frame of frames) {
              const lines = frame.split('\n');
              const id = lines
                .find((l) => l.startsWith('id:'))
                ?.slice(3)
                .trim();
              const data = lines
                .filter((l) => l.startsWith('data:'))
                .map((l) => l.slice(5).trim())
                .join('\n');
              if (id) lastId = id;
              if (data) onEvent(safeJson(data), id);
            }
          }
        } catch (err) {
          if (signal.aborted) return;
          if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) throw err;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A query string of the set values only. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
