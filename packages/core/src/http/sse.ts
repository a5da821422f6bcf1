import type { Principal } from '@rein/contract';
import type { FastifyReply } from 'fastify';
import type { RedisClient } from '../adapters/redis/redis.js';
import { type SseEntry, type SseFrames, type SseSource, StreamHub } from '../adapters/redis/stream-hub.js';
import { TooManyStreamsError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { ReinOptions } from '../shared/options.js';
import { takeOver } from './raw-reply.js';

export type { SseEntry, SseFrames, SseSource };

const HEARTBEAT_MS = 15_000;
/** A reader that takes nothing for this long while its socket's buffer is full is let go (its slot freed). */
const DRAIN_TIMEOUT_MS = 30_000;
/** Past this many unread bytes on a socket, writing waits for the reader. */
const MAX_UNREAD_BYTES = 256 * 1024;

/** Rein's own events: the SSE id is the stream entry id, the SSE event its type. */
const reinFrames: Pick<SseFrames, 'open' | 'close'> = { open: () => [], close: () => [] };

/** How many event streams one process lets a tenant, and one user of it, hold open at once. */
export interface StreamCaps {
  perTenant: number;
  perUser: number;
}

export const streamCaps = (http: Pick<ReinOptions['http'], 'maxStreamsPerTenant' | 'maxStreamsPerUser'>): StreamCaps => ({
  perTenant: http.maxStreamsPerTenant,
  perUser: http.maxStreamsPerUser,
});

/**
 * Everything a process needs to serve server-sent events: one StreamHub (one blocking
 * Redis connection, whatever the number of open streams) and caps on the streams a
 * tenant, and each of its users, hold open on this process (one user cannot take the
 * tenant's every slot).
 */
export class EventStreams {
  private readonly hub: StreamHub;
  private readonly open = new Map<string, number>();
  private readonly live = new Set<AbortController>();

  constructor(
    redis: RedisClient,
    private readonly logger: Logger,
    private readonly caps: StreamCaps,
  ) {
    this.hub = new StreamHub(redis, logger);
  }

  /**
   * Takes one of the caller's open-stream slots until `release` is called: a caller whose
   * user or tenant is at its cap gets 429 `too_many_streams`. Whatever follows a run on a
   * held connection (an SSE stream, a protocol's blocking call) takes one.
   */
  hold(caller: Pick<Principal, 'tenantId' | 'userId'>): () => void {
    const holders = [
      { key: JSON.stringify([caller.tenantId]), cap: this.caps.perTenant, of: 'tenant' as const },
      { key: JSON.stringify([caller.tenantId, caller.userId]), cap: this.caps.perUser, of: 'user' as const },
    ];
    const full = holders.find((h) => (this.open.get(h.key) ?? 0) >= h.cap);
    if (full) throw new TooManyStreamsError(full.cap, full.of);
    for (const h of holders) this.open.set(h.key, (this.open.get(h.key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const h of holders) {
        const left = (this.open.get(h.key) ?? 1) - 1;
        if (left > 0) this.open.set(h.key, left);
        else this.open.delete(h.key);
      }
    };
  }

  /**
   * The entries of `source` after `fromId`, a batch at a time, until its last entry, its
   * end, or `signal`; an empty batch says a heartbeat's time passed with nothing new.
   * Streams end on `close()` too.
   */
  async *follow<E extends SseEntry>(source: SseSource<E>, fromId: string, signal: AbortSignal): AsyncGenerator<E[]> {
    const closed = new AbortController();
    const stop = () => closed.abort();
    signal.addEventListener('abort', stop, { once: true });
    this.live.add(closed);
    let cursor = fromId;
    // Set once the source has ended: one more read sends what the finish wrote, then the stream ends.
    let ending = false;
    try {
      while (!closed.signal.aborted) {
        const entries = await source.read(cursor);
        const kept = new Set(source.keep ? await source.keep(entries) : entries);
        const last = entries.findIndex((entry) => source.isLast?.(entry));
        const batch = last < 0 ? entries : entries.slice(0, last + 1);
        if (batch.length > 0) cursor = (batch[batch.length - 1] as E).id;
        const shown = batch.filter((entry) => kept.has(entry));
        if (shown.length > 0) yield shown;
        if (last >= 0) return;
        if (entries.length > 0) continue;
        if (ending) return;
        if (await source.ended?.()) ending = true;
        else if (!(await this.hub.wait(source.key, cursor, HEARTBEAT_MS, closed.signal)) && !closed.signal.aborted) yield [];
      }
    } finally {
      signal.removeEventListener('abort', stop);
      this.live.delete(closed);
    }
  }

  /**
   * Streams `source` from `fromId` as SSE. Each SSE id is the stream entry id, so a client
   * that reconnects with Last-Event-ID resumes exactly where it left off. A caller whose
   * user or tenant is at its cap gets 429 `too_many_streams` before the stream opens.
   * `frames`: a protocol door's own writing of the entries (no SSE ids: its clients replay).
   */
  async serve<E extends SseEntry>(
    reply: FastifyReply,
    caller: Pick<Principal, 'tenantId' | 'userId'>,
    source: SseSource<E>,
    fromId: string,
    frames?: SseFrames<E>,
  ): Promise<void> {
    const release = this.hold(caller);
    const closed = new AbortController();
    let gone = false;
    const res = openSse(
      reply,
      () => {
        gone = true;
        closed.abort();
      },
      frames?.headers,
    );
    const { open, close } = frames ?? reinFrames;
    const data = (payloads: string[]) => payloads.map((p) => `data: ${p}\n\n`).join('');
    /** Writes, and when the reader is far behind waits for it (bounded): a reader that never reads is let go. */
    const send = async (text: string) => {
      if (!text || gone) return;
      res.write(text);
      if (res.writableLength > MAX_UNREAD_BYTES && !(await drained(res, closed.signal))) {
        this.logger.warn({ unread: res.writableLength }, 'event stream reader fell behind; closing it');
        gone = true;
        res.destroy();
        closed.abort();
      }
    };
    try {
      await send(`: rein events\n\n${data(open())}`);
      follow: for await (const batch of this.follow(source, fromId, closed.signal)) {
        if (batch.length === 0) await send(': heartbeat\n\n');
        for (const entry of batch) {
          await send(
            frames ? data(frames.entry(entry)) : `id: ${entry.id}\nevent: ${entry.event.type}\ndata: ${JSON.stringify(entry.event)}\n\n`,
          );
          // Asked again once written: a door's frames may decide, as they translate an entry, that it ends the stream.
          if (source.isLast?.(entry)) break follow;
        }
      }
      await send(data(close()));
    } catch (err) {
      if (!closed.signal.aborted) this.logger.warn({ err: (err as Error).message }, 'event stream ended');
    } finally {
      release();
      res.end();
    }
  }

  /** Ends every open stream (clients reconnect elsewhere with Last-Event-ID) and the shared reader. */
  close(): void {
    for (const stream of this.live) stream.abort();
    this.hub.close();
  }
}

/** Takes the reply over as a server-sent event stream; `onClose` runs when the client goes. */
export function openSse(reply: FastifyReply, onClose: () => void, headers?: Record<string, string>): FastifyReply['raw'] {
  const res = takeOver(reply);
  res.on('close', onClose);
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  return res;
}

/** Last-Event-ID (header, or `lastEventId` query for clients that cannot set headers); '0' = from the start. */
export function lastEventId(headers: Record<string, unknown>, query: unknown): string {
  const raw = headers['last-event-id'] ?? (query as { lastEventId?: unknown } | undefined)?.lastEventId;
  return typeof raw === 'string' && /^\d+-\d+$/.test(raw) ? raw : '0';
}

/** Whether the socket drained before the timeout (false also when the reader left). */
function drained(res: FastifyReply['raw'], signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      signal.removeEventListener('abort', onAbort);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), DRAIN_TIMEOUT_MS);
    res.once('drain', onDrain);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
