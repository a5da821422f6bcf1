import type { FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

const HEARTBEAT_MS = 15_000;

/** A Redis stream entry as the run and approval stores return it; the event's `type` names the SSE event. */
export interface SseEntry {
  id: string;
  event: { type: string };
}

export interface SseSource {
  /** Entries after `cursor`, waiting up to `blockMs` on the given (dedicated) connection. */
  read(cursor: string, blockMs: number, connection: Redis): Promise<SseEntry[]>;
  /** Whether this entry ends the stream (e.g. a run finished). */
  isLast?(entry: SseEntry): boolean;
}

/**
 * Server-sent events from a Redis stream. Each SSE id is the stream entry id, so a
 * client that reconnects with Last-Event-ID resumes exactly where it left off.
 * Blocking reads need their own connection, one per open stream.
 */
export async function streamSse(reply: FastifyReply, redis: Redis, logger: Logger, source: SseSource, fromId: string): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': rein events\n\n');
  const reader = redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
  reader.on('error', (err) => logger.warn({ err: err.message }, 'event stream redis error'));
  let open = true;
  res.on('close', () => {
    open = false;
    reader.disconnect();
  });
  let cursor = fromId;
  try {
    while (open) {
      const entries = await source.read(cursor, HEARTBEAT_MS, reader);
      if (entries.length === 0) res.write(': heartbeat\n\n');
      for (const entry of entries) {
        res.write(`id: ${entry.id}\nevent: ${entry.event.type}\ndata: ${JSON.stringify(entry.event)}\n\n`);
        cursor = entry.id;
        if (source.isLast?.(entry)) open = false;
      }
    }
  } catch (err) {
    if (open) logger.warn({ err: (err as Error).message }, 'event stream ended');
  } finally {
    reader.disconnect();
    res.end();
  }
}

/** Last-Event-ID (header, or `lastEventId` query for clients that cannot set headers); '0' = from the start. */
export function lastEventId(headers: Record<string, unknown>, query: unknown): string {
  const raw = headers['last-event-id'] ?? (query as { lastEventId?: unknown } | undefined)?.lastEventId;
  return typeof raw === 'string' && /^\d+-\d+$/.test(raw) ? raw : '0';
}
