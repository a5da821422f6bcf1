import type { Runtime } from '@rein/core';
import type { FastifyReply } from 'fastify';

const HEARTBEAT_MS = 15_000;

/**
 * Server-sent events from the run's Redis stream. Each SSE id is the stream entry id,
 * so a client that reconnects with Last-Event-ID resumes exactly where it left off.
 * Blocking reads need their own connection, one per open stream.
 */
export async function streamRunEvents(rt: Runtime, reply: FastifyReply, runId: string, fromId: string): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': rein run events\n\n');
  const reader = rt.redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
  reader.on('error', (err) => rt.logger.warn({ err: err.message }, 'event stream redis error'));
  let open = true;
  res.on('close', () => {
    open = false;
    reader.disconnect();
  });
  let cursor = fromId;
  try {
    while (open) {
      const entries = await rt.store.readEvents(runId, cursor, HEARTBEAT_MS, reader);
      if (entries.length === 0) res.write(': heartbeat\n\n');
      for (const { id, event } of entries) {
        res.write(`id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
        cursor = id;
        if (event.type === 'run.finished') open = false;
      }
    }
  } catch (err) {
    if (open) rt.logger.warn({ err: (err as Error).message, runId }, 'event stream ended');
  } finally {
    reader.disconnect();
    res.end();
  }
}
