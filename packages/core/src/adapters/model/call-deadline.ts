/**
 * The time a model call may take, enforced on the wire: `signal` aborts the request and
 * its body once `totalMs` have passed, or once the reply, having started, has been silent
 * for `idleMs`. The SDK's own timeout stops at the headers; a stream that stalls or
 * trickles keep-alive comments would otherwise hold its worker slot for ever.
 */
export interface CallDeadline {
  signal: AbortSignal;
  /** The reply moved (an event arrived): the idle clock starts again. */
  touch(): void;
  /** Why the call was cut, once it was: the whole call's time (`total`) or the reply's silence (`idle`). */
  cut(): { by: 'total' | 'idle'; reason: string } | undefined;
  stop(): void;
}

export function startCallDeadline(totalMs: number, idleMs?: number): CallDeadline {
  const controller = new AbortController();
  let reason: { by: 'total' | 'idle'; reason: string } | undefined;
  const cut = (by: 'total' | 'idle', why: string) => {
    if (reason) return;
    reason = { by, reason: why };
    controller.abort(new Error(why));
  };
  const total = setTimeout(() => cut('total', `no complete reply within ${totalMs} ms`), totalMs);
  let idle: NodeJS.Timeout | undefined;
  return {
    signal: controller.signal,
    touch() {
      if (idleMs === undefined || reason) return;
      clearTimeout(idle);
      idle = setTimeout(() => cut('idle', `the reply stalled: nothing for ${idleMs} ms`), idleMs);
    },
    cut: () => reason,
    stop() {
      clearTimeout(total);
      clearTimeout(idle);
    },
  };
}
