import type { Logger } from 'pino';

/** Error codes and messages that say a Redis connection is away, not that a command went wrong. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
]);
const CONNECTION_MESSAGE =
  /Connection is closed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|Socket closed unexpectedly|Stream isn't writeable|enableOfflineQueue|max retries per request|All nodes failed|Failed to refresh slots cache/i;

export function isConnectionError(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: string; message?: string };
  return (code !== undefined && CONNECTION_CODES.has(code)) || CONNECTION_MESSAGE.test(message ?? '');
}

/** The first reminder that a connection is still away comes this long after the first line; each next one twice as long after. */
const FIRST_REMINDER_MS = 10_000;
const MAX_REMINDER_MS = 10 * 60_000;

interface Outage {
  since: number;
  errors: number;
  nextReminderAt: number;
  reminderMs: number;
}

/** What a connection's state reads from: ioredis's `status` ('ready' once connected). */
export interface WatchedConnection {
  status: string;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
}

/**
 * A Redis outage in the log as a few structured lines, not thousands: one when a connection
 * goes away, reminders at growing intervals (10 s, 20 s, 40 s, … at most 10 min apart) while
 * it stays away, and one when it is back, saying for how long. Meanwhile ioredis reconnects
 * with its own backoff, and the errors of every client, queue and worker on that connection
 * (each reconnect attempt, each failed fetch) are counted into the outage instead of logged.
 * Every error has a listener here, so neither ioredis nor BullMQ prints one outside the log.
 */
export class RedisOutages {
  private readonly outages = new Map<string, Outage>();
  private readonly connections = new Map<string, WatchedConnection>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reports the outages of one connection under a name (`redis`, `queues`, …). */
  watch(name: string, connection: WatchedConnection): void {
    this.connections.set(name, connection);
    connection.on('error', (err) => this.down(name, err));
    connection.on('ready', () => this.up(name));
  }

  /**
   * An error a queue or worker on connection `name` emitted: a connection error belongs to
   * that connection's outage (or, if the connection is up, to a duplicate BullMQ opened and is
   * reconnecting: debug); anything else is logged as `msg`.
   */
  error(name: string, err: Error, msg: string, fields: Record<string, unknown> = {}): void {
    if (!isConnectionError(err)) {
      this.logger.warn({ ...fields, err: err.message }, msg);
      return;
    }
    if (this.connections.get(name)?.status === 'ready' && !this.outages.has(name)) {
      this.logger.debug({ ...fields, redis: name, err: err.message }, msg);
      return;
    }
    this.down(name, err);
  }

  /** Whether connection `name` is in an outage now. */
  isDown(name: string): boolean {
    return this.outages.has(name);
  }

  private down(name: string, err: Error): void {
    const at = this.now();
    const outage = this.outages.get(name);
    if (!outage) {
      this.outages.set(name, { since: at, errors: 1, nextReminderAt: at + FIRST_REMINDER_MS, reminderMs: FIRST_REMINDER_MS });
      this.logger.warn({ redis: name, err: err.message }, `Redis connection "${name}" lost: reconnecting with backoff`);
      return;
    }
    outage.errors++;
    if (at < outage.nextReminderAt) return;
    this.logger.warn(
      { redis: name, err: err.message, downMs: at - outage.since, errors: outage.errors },
      `Redis connection "${name}" still down: reconnecting with backoff`,
    );
    outage.reminderMs = Math.min(outage.reminderMs * 2, MAX_REMINDER_MS);
    outage.nextReminderAt = at + outage.reminderMs;
  }

  private up(name: string): void {
    const outage = this.outages.get(name);
    if (!outage) return;
    this.outages.delete(name);
    this.logger.info({ redis: name, downMs: this.now() - outage.since, errors: outage.errors }, `Redis connection "${name}" is back`);
  }
}
