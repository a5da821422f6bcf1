import type { Principal } from '@rein/contract';
import type { FastifyReply } from 'fastify';
import type { RedisClient } from '../adapters/redis/redis.js';
import { type SseEntry, type SseSource, StreamHub } from '../adapters/redis/stream-hub.js';
import { TooManyStreamsError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { ReinOptions } from '../shared/options.js';

export type { SseEntry, SseSource };

const HEARTBEAT_MS = 15_000;

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
   * Takes one of the caller's stream slots on this process, or answers 429
   * `too_many_streams` when their user or tenant is at its cap; the returned function
   * gives it back. Every long-lived answer (SSE, a wait for a run) holds one.
   */
  hold(caller: Pick<Principal, 'tenantId' | 'userId'>): () => void {
    const holders = [
      { key: JSON.stringify([caller.tenantId]), cap: this.caps.perTenant, of: 'tenant' as const },
      { key: JSON.stringify([caller.tenantId, caller.userId]), cap: this.caps.perUser, of: 'user' as const },
    ];
    const full = holders.find((h) => (this.open.get(h.key) ?? 0) >= h.cap);
    if (full) throw new TooManyStreamsError(full.cap, full.of);
    for (const h of holders) this.open.set(h.key, (this.open.get(h.key) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      for (const h of holders) {
        const left = (this.open.get(h.key) ?? 1) - 1;
        if (left > 0) this.open.set(h.key, left);
        else this.open.delete(h.key);
      }
    };
  }

  /**
   * The source's entries after `fromId`, as they come, until its last entry, its end, or
   * `signal`; `null` when a heartbeat interval passed with nothing new (a reader may
   * write a keep-alive). Closing the process ends every follower.
   */
  async *follow<E extends SseEntry>(source: SseSource<E>, fromId: string, signal: AbortSignal): AsyncGenerator<E | null> {
    const closed = new AbortController();
    const abort = () => closed.abort();
    signal.addEventListener('abort', abort, { once: true });
    this.live.add(closed);
    let cursor = fromId;
    // Set once the source has ended: one more read sends what the finish wrote, then it ends.
    let ending = false;
    try {
      while (!closed.signal.aborted) {
        const entries = await source.read(cursor);
        const kept = new Set(source.keep ? await source.keep(entries) : entries);
        for (const entry of entries) {
          if (kept.has(entry)) yield entry;
          cursor = entry.id;
          if (source.isLast?.(entry)) closed.abort();
        }
        if (entries.length > 0 || closed.signal.aborted) continue;
        if (ending) break;
        if (await source.ended?.()) ending = true;
        else if (!(await this.hub.wait(source.key, cursor, HEARTBEAT_MS, closed.signal)) && !closed.signal.aborted) yield null;
      }
    } finally {
      signal.removeEventListener('abort', abort);
      this.live.delete(closed);
    }
  }

  /**
   * Streams `source` from `fromId` as SSE. Each SSE id is the stream entry id, so a client
   * that reconnects with Last-Event-ID resumes exactly where it left off. A caller whose
   * user or tenant is at its cap gets 429 `too_many_streams` before the stream opens.
   */
  async serve<E extends SseEntry>(
    reply: FastifyReply,
    caller: Pick<Principal, 'tenantId' | 'userId'>,
    source: SseSource<E>,
    fromId: string,
  ): Promise<void> {
    const release = this.hold(caller);
    const closed = new AbortController();
    reply.hijack();
    const res = reply.raw;
    res.on('close', () => closed.abort());
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(': rein events\n\n');
    try {
      for await (const entry of this.follow(source, fromId, closed.signal)) {
        if (entry) res.write(`id: ${entry.id}\nevent: ${entry.event.type}\ndata: ${JSON.stringify(entry.event)}\n\n`);
        else res.write(': heartbeat\n\n');
      }
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

/** Last-Event-ID (header, or `lastEventId` query for clients that cannot set headers); '0' = from the start. */
export function lastEventId(headers: Record<string, unknown>, query: unknown): string {
  const raw = headers['last-event-id'] ?? (query as { lastEventId?: unknown } | undefined)?.lastEventId;
  return typeof raw === 'string' && /^\d+-\d+$/.test(raw) ? raw : '0';
}
