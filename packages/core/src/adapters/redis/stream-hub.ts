import type { Logger } from '../../shared/logger.js';
import { isCluster, type RedisClient } from './redis.js';

/** A Redis stream entry as the run and approval stores return it; the event's `type` names the SSE event. */
export interface SseEntry {
  id: string;
  event: { type: string };
}

/**
 * How a stream's entries are written (each string one SSE `data:` payload): Rein's own
 * events by default; a protocol door writes its protocol's, over the same reader and caps.
 */
export interface SseFrames<E extends SseEntry = SseEntry> {
  /** Response headers beyond the event-stream ones (a protocol's marker header). */
  headers?: Record<string, string>;
  /** Written before the first entry. */
  open(): string[];
  entry(entry: E): string[];
  /** Written when the stream ends while its reader is still there. */
  close(): string[];
}

export interface SseSource<E extends SseEntry = SseEntry> {
  /** The Redis stream the events live in. */
  key: string;
  /** Entries after `cursor`, without blocking. */
  read(cursor: string): Promise<E[]>;
  /** Whether this entry ends the stream (e.g. a run finished). */
  isLast?(entry: E): boolean;
  /** The entries of a batch this reader may receive (default all); the cursor moves past the others too. */
  keep?(entries: E[]): Promise<E[]>;
  /**
   * Whether nothing more will ever be written (e.g. the run finished), asked when a read
   * finds nothing new: a reader whose cursor is past the last entry is not kept waiting.
   */
  ended?(): Promise<boolean>;
}

/** Stream ids compare as (milliseconds, sequence). */
export function streamIdAfter(a: string, b: string): boolean {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am !== bm ? am > bm : as > bs;
}

interface Waiter {
  after: string;
  wake: (moved: boolean) => void;
}

/**
 * Tells readers of Redis streams that something new arrived, for all the streams a
 * process serves, over ONE blocking connection: a loop blocks in XREAD on every watched
 * key at once and wakes the waiters of the keys that moved. Readers then fetch their
 * entries without blocking on the shared connection, each from its own cursor, so open
 * event streams never add Redis connections. A new key interrupts the blocked XREAD with
 * CLIENT UNBLOCK so it is watched at once.
 *
 * On a Redis Cluster one XREAD cannot span slots, and every run's stream has a slot of
 * its own; a blocking reader per stream would bring back a connection per open stream.
 * There the loop polls instead: one non-blocking XREAD per key (ioredis sends each to
 * its node) every CLUSTER_POLL_MS, cut short when a key is added.
 */
const CLUSTER_POLL_MS = 100;

type XreadReply = Array<[key: string, entries: Array<[id: string, fields: string[]]>]>;

export class StreamHub {
  /** The blocking connection (single node only; on a cluster the loop polls over `control`). */
  private readonly reader: RedisClient | undefined;
  /** Ends the pause between two cluster polls early. */
  private cutPause: (() => void) | undefined;
  /** Per watched key: the newest id the hub has seen, and who waits for something after it. */
  private readonly watched = new Map<string, { last: string; waiters: Set<Waiter> }>();
  private readerId: number | undefined;
  /** Bumped when a key is added; the loop records which generation its current XREAD covers. */
  private generation = 0;
  private reading = 0;
  private looping = false;
  private closed = false;

  constructor(
    private readonly control: RedisClient,
    private readonly logger: Logger,
  ) {
    if (isCluster(control)) return;
    const reader = control.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    reader.on('error', (err) => logger.warn({ err: err.message }, 'stream hub redis error'));
    reader.on('ready', () => {
      this.readerId = undefined; // a reconnect is a new client id
    });
    this.reader = reader;
  }

  /**
   * Resolves `true` when `key` has an entry after `after` (at once if the hub already
   * knows of one), `false` after `timeoutMs` or when `signal` aborts.
   */
  wait(key: string, after: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      let entry = this.watched.get(key);
      if (entry && streamIdAfter(entry.last, after)) return resolve(true);
      const fresh = !entry;
      if (!entry) {
        entry = { last: after, waiters: new Set() };
        this.watched.set(key, entry);
      }
      const waiters = entry.waiters;
      const waiter: Waiter = {
        after,
        wake: (moved: boolean) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', aborted);
          waiters.delete(waiter);
          if (waiters.size === 0 && this.watched.get(key)?.waiters === waiters) this.watched.delete(key);
          resolve(moved);
        },
      };
      const aborted = () => waiter.wake(false);
      const timer = setTimeout(aborted, timeoutMs);
      signal?.addEventListener('abort', aborted, { once: true });
      waiters.add(waiter);
      if (fresh) void this.rewatch();
    });
  }

  close(): void {
    this.closed = true;
    for (const { waiters } of this.watched.values()) for (const w of [...waiters]) w.wake(false);
    this.reader?.disconnect();
    this.cutPause?.();
  }

  /**
   * Starts the loop, or makes the running one pick up a new key now. The UNBLOCK travels
   * on another connection and may arrive before the XREAD blocks, so it is repeated
   * until the loop has started a read that covers the new key.
   */
  private async rewatch(): Promise<void> {
    const wanted = ++this.generation;
    if (!this.looping) return void this.loop();
    if (!this.reader) return this.cutPause?.();
    for (let tries = 0; tries < 100 && this.reading < wanted && this.looping && !this.closed; tries++) {
      if (this.readerId !== undefined) await this.control.client('UNBLOCK', this.readerId).catch(() => {});
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  private async loop(): Promise<void> {
    this.looping = true;
    try {
      while (!this.closed && this.watched.size > 0) {
        this.reading = this.generation;
        const keys = [...this.watched.keys()];
        const ids = keys.map((k) => this.watched.get(k)?.last ?? '$');
        try {
          const reply = this.reader ? await this.blockingRead(this.reader, keys, ids) : await this.poll(keys, ids);
          for (const [key, entries] of reply ?? []) {
            const newest = entries.at(-1)?.[0];
            const entry = this.watched.get(key);
            if (!entry || !newest) continue;
            // COUNT 1 is enough to know the key moved; readers fetch the rest themselves.
            entry.last = newest;
            for (const w of [...entry.waiters]) if (streamIdAfter(newest, w.after)) w.wake(true);
          }
        } catch (err) {
          if (this.closed) return;
          this.logger.warn({ err: (err as Error).message }, 'stream hub read failed; retrying');
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    } finally {
      this.looping = false;
      // A key added while the loop was ending would otherwise wait for its timeout.
      if (!this.closed && this.watched.size > 0) void this.loop();
    }
  }

  private async blockingRead(reader: RedisClient, keys: string[], ids: string[]): Promise<XreadReply | null> {
    this.readerId ??= Number(await reader.client('ID'));
    return reader.xread('COUNT', 1, 'BLOCK', 10_000, 'STREAMS', ...keys, ...ids);
  }

  /** Cluster: every key read on its own (its own slot), then a short pause unless something moved. */
  private async poll(keys: string[], ids: string[]): Promise<XreadReply> {
    const replies = await Promise.all(keys.map((key, i) => this.control.xread('COUNT', 1, 'STREAMS', key, ids[i] ?? '$')));
    const moved = replies.flatMap((reply) => reply ?? []);
    if (moved.length === 0 && this.reading === this.generation) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CLUSTER_POLL_MS);
        this.cutPause = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.cutPause = undefined;
    }
    return moved;
  }
}
