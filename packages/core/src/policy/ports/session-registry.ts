import type { RunRecord } from '@rein/contract';

type SessionRun = Pick<RunRecord, 'id' | 'tenantId' | 'userId' | 'sessionId'>;

/**
 * A user's sessions: which run holds each (one at a time), the runs queued behind it
 * (`ifBusy`), and the session's runs in order (its history). A run without a
 * `sessionId` has no session: every call is a no-op for it.
 */
export interface SessionRegistry {
  /** Marks the run as the session's holder unless another run is busy there; returns the holder, or null. */
  claimSession(run: RunRecord): Promise<string | null>;
  /** The run holding the session, if any. */
  sessionHolder(run: Pick<RunRecord, 'tenantId' | 'userId' | 'sessionId'>): Promise<string | null>;
  /** Frees the session if this run still holds it. */
  releaseSession(run: SessionRun): Promise<void>;
  /** Queues a run behind the ones already waiting for the session. */
  joinSessionQueue(run: SessionRun): Promise<void>;
  sessionQueueHead(session: { tenantId: string; userId: string; sessionId: string }): Promise<string | null>;
  leaveSessionQueue(run: SessionRun): Promise<void>;
  /** Gives session `to` the runs of `from`; false when `to` already has runs. */
  copySession(tenantId: string, userId: string, from: string, to: string): Promise<boolean>;
  /** The session's runs, oldest first. */
  sessionRunIds(tenantId: string, userId: string, sessionId: string, limit?: number): Promise<string[]>;
}
