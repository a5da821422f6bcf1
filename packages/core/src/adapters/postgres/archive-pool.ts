import pg from 'pg';
import { ArchiveUnavailableError } from '../../shared/errors.js';

/**
 * The archive's connection pool (node-postgres, `pg`, pinned). Chosen over `postgres`
 * (porsager) because its Pool hands out one connection explicitly (`pool.connect()`):
 * the migration runner's session-level advisory lock and the archive write's
 * transaction must stay on one connection, which is spelled out here rather than
 * implied by a reserved tagged-template instance; it is pure JavaScript (nothing to
 * build), runs on Node 20, and is the driver most tools and operators know. Its idle
 * connections emit `error` when the server goes away: the pool drops them and opens
 * new ones on the next query, so a PostgreSQL restart costs failed queries, not the process.
 */
export interface ArchivePoolOptions {
  /** Connections at most (default 5: archive writes are off the step's hot path). */
  max?: number;
  /** How long a query waits for a connection before failing (default 5 s). */
  connectTimeoutMs?: number;
  /** The longest one statement may run, server side (default 15 s: a slow archive fails reads with 503 rather than hanging them); 0: none (migrations). */
  statementTimeoutMs?: number;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
  /** Called when an idle connection fails (the server restarted, the network dropped). */
  onError?: (err: Error) => void;
}

export type ArchivePool = pg.Pool;
/** What the archive's reads and writes need of a pool: queries. */
export type Queryable = Pick<pg.Pool, 'query'>;

/**
 * Whether an error says PostgreSQL could not be reached (refused, timed out, cut,
 * cancelled by the statement timeout) rather than answered: anything but an answered
 * error. SQLSTATE classes 08 (connection), 53 (resources) and 57 (cancelled: the
 * statement timeout, a shutdown) are the server's unavailability too.
 */
export function isArchiveUnavailable(err: unknown): boolean {
  return err instanceof ArchiveUnavailableError || !(err instanceof pg.DatabaseError) || /^(08|53|57)/.test(err.code ?? '');
}

/**
 * The pool as its readers see it: a query that cannot reach PostgreSQL fails as
 * ArchiveUnavailableError (503, try again); any other error PostgreSQL answered stays what it is.
 */
export function guardedQueries(pool: pg.Pool): Queryable {
  return {
    query: ((...args: Parameters<pg.Pool['query']>) =>
      (pool.query as (...a: unknown[]) => Promise<unknown>)(...args).catch((err: unknown) => {
        throw isArchiveUnavailable(err) && !(err instanceof ArchiveUnavailableError) ? new ArchiveUnavailableError(err) : err;
      })) as pg.Pool['query'],
  };
}

export function createArchivePool(url: string, opts: ArchivePoolOptions = {}): ArchivePool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 5,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: opts.statementTimeoutMs ?? 15_000,
    application_name: opts.applicationName ?? 'rein',
  });
  // Without a listener an idle connection's error would end the process.
  pool.on('error', (err) => opts.onError?.(err));
  // Nor may a checked-out one's (a transaction whose server went away): its query rejects all the same.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
