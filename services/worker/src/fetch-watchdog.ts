import type { Worker } from 'bullmq';

/**
 * BullMQ blocks on BZPOPMIN for at most 10 s and then rebuilds its blocking connection
 * itself if the wait overran by a second. A single wait for the next job that lasts far
 * longer means that rebuild hung, and the worker would hold its shard for ever while
 * looking alive (seen on a Redis Cluster after a master outage; see redis.ts). 30 s is
 * well past anything a healthy fetch loop does.
 */
export const WEDGED_AFTER_MS = 30_000;

/** The pending wait for the next job: private in BullMQ's types, pinned by a test. */
type Fetching = { waiting: Promise<number> | null };

export interface FetchWatchdog {
  /** One look at every worker; the timer calls it, tests call it directly. */
  check(): void;
  stop(): void;
}

/**
 * Watches the fetch loops of `workers` and calls `onWedged(i)` once a wait of
 * `workers[i]` has outlasted `wedgedAfterMs` while Redis answered: a wait during an
 * outage is the outage's, and BullMQ resumes on its own once Redis is back.
 */
export function watchFetchLoops(opts: {
  workers: readonly Worker[];
  redisReady: () => boolean;
  onWedged: (index: number) => void;
  wedgedAfterMs?: number;
  everyMs?: number;
  now?: () => number;
}): FetchWatchdog {
  const { workers, redisReady, onWedged, wedgedAfterMs = WEDGED_AFTER_MS, now = Date.now } = opts;
  const seen = new Map<number, { wait: Promise<number>; since: number }>();
  const check = () => {
    workers.forEach((worker, i) => {
      const wait = (worker as unknown as Fetching).waiting;
      const last = seen.get(i);
      if (!wait || !redisReady()) seen.delete(i);
      else if (last?.wait !== wait) seen.set(i, { wait, since: now() });
      else if (now() - last.since > wedgedAfterMs) {
        seen.delete(i);
        onWedged(i);
      }
    });
  };
  const timer = setInterval(check, opts.everyMs ?? 5_000);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
