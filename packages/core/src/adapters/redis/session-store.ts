import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { SessionRegistry } from '../../policy/ports/session-registry.js';
import { tenantKeys } from '../../shared/keys.js';
import { ClaimResult, type ScriptGateway, scriptGateway } from './lua-scripts.js';
import type { RedisClient } from './redis.js';

/**
 * How long a session claim whose run has no record yet counts as busy: far longer than
 * the few Redis round trips between the claim, its renewal and the run's creation.
 */
export const SESSION_CLAIM_MS = 30_000;

/**
 * Sessions in Redis, under their tenant's hash tag: the holder's marker, the queue of runs
 * waiting for it, and its runs' index (written by RunStore.create when a run is created).
 */
export class RedisSessions implements SessionRegistry {
  private readonly scripts: ScriptGateway;

  constructor(
    private readonly redis: RedisClient,
    private readonly traceTtlSeconds: number,
    /** Where a holder's run is read, to tell a busy holder from a finished one. */
    private readonly runs: Pick<RunRepository, 'get'>,
  ) {
    this.scripts = scriptGateway(redis);
  }

  /**
   * Gives session `to` the runs of session `from` (its index copied, both under the tenant's
   * hash tag): `to`'s next run continues from the same history. False when `to` already has runs.
   */
  async copySession(tenantId: string, userId: string, from: string, to: string): Promise<boolean> {
    const t = tenantKeys(tenantId);
    return (await this.redis.copy(t.sessionRuns(userId, from), t.sessionRuns(userId, to))) === 1;
  }

  /** A user's session runs, oldest first. */
  async sessionRunIds(tenantId: string, userId: string, sessionId: string, limit = 200): Promise<string[]> {
    return this.redis.zrange(tenantKeys(tenantId).sessionRuns(userId, sessionId), -limit, -1);
  }

  /**
   * Marks `runId` as the session's active run unless another one is; returns the one
   * that holds the session. Call it again right before creating the run: that renews the
   * claim (or says who took it over). A holder counts as busy while its run is active, or
   * while it has no record yet and its claim is younger than SESSION_CLAIM_MS (it is being
   * created: the marker and the run live in different slots, so no script sees both). A
   * holder that finished, or whose creator crashed before creating it, is replaced; the
   * marker's TTL only bounds what an abandoned session leaves.
   */
  async claimSession(run: RunRecord): Promise<string | null> {
    if (!run.sessionId) return null;
    const t = tenantKeys(run.tenantId);
    const key = t.sessionActive(run.userId, run.sessionId);
    let replace = '';
    for (let tries = 0; tries < 3; tries++) {
      const [result, marker, nowMs] = await this.scripts.claimSession(
        { active: key, queue: t.sessionQueue(run.userId, run.sessionId) },
        { runId: run.id, ttlSeconds: this.traceTtlSeconds, replace },
      );
      if (result === ClaimResult.Claimed) return null;
      if (result === ClaimResult.Queued) return marker; // runs wait for the session: this one goes behind them
      const [holder = '', claimedAt] = marker.split(' ');
      const held = await this.runs.get(holder);
      if (held ? !TERMINAL_STATUSES.includes(held.status) : nowMs - Number(claimedAt ?? 0) < SESSION_CLAIM_MS) return holder;
      replace = marker;
    }
    // Lost three races in a row: someone else keeps starting runs in this session.
    return 'another run';
  }

  /** The run holding the session's marker, if any ("<runId> <claimedAtMs>"). */
  async sessionHolder(run: Pick<RunRecord, 'tenantId' | 'userId' | 'sessionId'>): Promise<string | null> {
    if (!run.sessionId) return null;
    const marker = await this.redis.get(tenantKeys(run.tenantId).sessionActive(run.userId, run.sessionId));
    return marker ? (marker.split(' ')[0] ?? null) : null;
  }

  /** Queues a run for its session (`ifBusy`), behind the ones already waiting. */
  async joinSessionQueue(run: Pick<RunRecord, 'id' | 'tenantId' | 'userId' | 'sessionId'>): Promise<void> {
    if (!run.sessionId) return;
    const key = tenantKeys(run.tenantId).sessionQueue(run.userId, run.sessionId);
    await this.redis.multi().rpush(key, run.id).expire(key, this.traceTtlSeconds).exec();
  }

  /** The run first in line for the session, if any. */
  async sessionQueueHead(session: { tenantId: string; userId: string; sessionId: string }): Promise<string | null> {
    return this.redis.lindex(tenantKeys(session.tenantId).sessionQueue(session.userId, session.sessionId), 0);
  }

  async leaveSessionQueue(run: Pick<RunRecord, 'id' | 'tenantId' | 'userId' | 'sessionId'>): Promise<void> {
    if (run.sessionId) await this.redis.lrem(tenantKeys(run.tenantId).sessionQueue(run.userId, run.sessionId), 0, run.id);
  }

  /** Frees the session if this run still holds it (compare-and-delete). */
  async releaseSession(run: Pick<RunRecord, 'id' | 'tenantId' | 'userId' | 'sessionId'>): Promise<void> {
    if (run.sessionId)
      await this.scripts.releaseSession({ active: tenantKeys(run.tenantId).sessionActive(run.userId, run.sessionId) }, { runId: run.id });
  }
}
