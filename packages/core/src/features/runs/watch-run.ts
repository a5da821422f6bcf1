import type { Principal } from '@rein/contract';

/**
 * Wakes a follower of a run whenever its event stream moves (an empty batch: a heartbeat's
 * time passed), until the run finishes or `signal` aborts. The HTTP layer's event streams
 * provide it, so a protocol door waits on the run without polling and without a connection of its own.
 */
export type WatchRun = (principal: Principal, runId: string, signal: AbortSignal) => AsyncIterable<unknown[]>;
