import type { RunRecord } from '@rein/contract';
import { type RunEvent, runEventSchema } from '@rein/contract';
import type { RunRepository, StoredEvent } from '../../policy/ports/run-repository.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { ARCHIVE_BACKLOG_KEY, ARCHIVE_HOT_KEY, runKeys } from '../../shared/keys.js';
import type { RunTreeParts } from '../postgres/run-archive.js';
import { type ScriptGateway, scriptGateway } from './lua-scripts.js';
import { type RedisClient, sendCommands } from './redis.js';

/**
 * Everything a finished run keeps in Redis, as the archive writes it, and its revision.
 * `revision` orders two reads of one run: each part only grows after the finish (the
 * run's version with decisions on its saga, steps recorded after the finish, events
 * appended, the compensation's last change), so a later read is never smaller, and
 * compared part by part (PostgreSQL compares arrays so) a later read wins.
 */
export interface RunSnapshot {
  run: RunRecord;
  steps: Awaited<ReturnType<TurnJournal['steps']>>;
  approvals: Awaited<ReturnType<RunRepository['approvals']>>;
  compensation: Awaited<ReturnType<RunRepository['compensation']>>;
  events: StoredEvent[];
  revision: number[];
  /** Its children and descendants' spending: not part of the revision (a descendant's change appends an event here too). */
  tree: RunTreeParts;
}

/** The revision of what a snapshot holds (see RunSnapshot), from its own parts. */
export function revisionOf(s: Omit<RunSnapshot, 'revision' | 'tree'>): number[] {
  const [ms = 0, seq = 0] = (s.events.at(-1)?.id ?? '0-0').split('-').map(Number);
  return [s.run.version, s.steps.length, ms, seq, s.compensation ? Date.parse(s.compensation.updatedAt) : 0];
}

export const sameRevision = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The Redis side of the archive: a finished run's snapshot, the backlog of runs not yet
 * confirmed archived and the hot set of archived runs still in Redis (both global
 * sorted sets by finish time), and the drop of an archived run's keys. The tenant's
 * indexes stay (they are trimmed at REIN_TRACE_TTL_DAYS): lists page through them and
 * read what is gone from the archive.
 */
export class HotRuns {
  private readonly scripts: ScriptGateway;

  constructor(
    private readonly redis: RedisClient,
    private readonly store: RunRepository & TurnJournal,
  ) {
    this.scripts = scriptGateway(redis);
  }

  /** The run's snapshot, or null when its keys are gone. */
  async snapshot(runId: string): Promise<RunSnapshot | null> {
    const run = await this.store.get(runId);
    if (!run) return null;
    const [steps, approvals, compensation, events, children, [node]] = await Promise.all([
      this.store.steps(runId),
      this.store.approvals(runId),
      this.store.compensation(runId),
      this.events(runId),
      this.store.children(runId),
      this.store.treeNodes([runId]),
    ]);
    const parts = { run, steps, approvals, compensation, events };
    return { ...parts, revision: revisionOf(parts), tree: { children, descendants: node?.descendants ?? [] } };
  }

  private async events(runId: string): Promise<StoredEvent[]> {
    const entries = (await this.redis.xrange(runKeys(runId).events, '-', '+')) as Array<[string, string[]]>;
    return entries.map(([id, fields]) => ({
      id,
      event: runEventSchema.parse({ ...(JSON.parse(fields[1] ?? '{}') as Omit<RunEvent, 'runId'>), runId }),
    }));
  }

  /** A run finished (or changed after its finish): it is in the backlog until an archive write of it is confirmed. */
  async pending(run: RunRecord): Promise<void> {
    await this.redis.zadd(ARCHIVE_BACKLOG_KEY, Date.parse(run.updatedAt), run.id);
  }

  /** The archive holds `revision` of the run: its hash says so, and it moves from the backlog to the hot set. */
  async archived(run: RunRecord, revision: number[]): Promise<void> {
    const at = Date.parse(run.updatedAt);
    // Only on a hash that still holds the run: a field written on dropped keys would create a hash with no TTL.
    const marked = await this.scripts.markArchived(
      { run: runKeys(run.id).run },
      { at: new Date().toISOString(), revision: revision.join('.') },
    );
    if (marked !== 1) return this.forget(run.id);
    await sendCommands(this.redis, [
      ['zadd', ARCHIVE_HOT_KEY, at, run.id],
      ['zrem', ARCHIVE_BACKLOG_KEY, run.id],
    ]);
  }

  /**
   * The archive refused the run and keeps it as a dead letter: out of the backlog, and not
   * in the hot set either, so hot retention never drops its keys (they last their TTL).
   */
  async deadLettered(runId: string): Promise<void> {
    await this.redis.zrem(ARCHIVE_BACKLOG_KEY, runId);
  }

  /** When the archive confirmed a write of the run, if it did (the hash's `archivedAt`). */
  async archivedAt(runId: string): Promise<string | null> {
    return this.redis.hget(runKeys(runId).run, 'archivedAt');
  }

  /** Backlog entries that finished before `before` (ms), oldest first. */
  async backlog(before: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(ARCHIVE_BACKLOG_KEY, '-inf', before, 'LIMIT', 0, limit);
  }

  async backlogSize(): Promise<number> {
    return this.redis.zcard(ARCHIVE_BACKLOG_KEY);
  }

  /** Hot runs that finished before `before` (ms), oldest first: due for their keys to go. */
  async due(before: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(ARCHIVE_HOT_KEY, '-inf', before, 'LIMIT', 0, limit);
  }

  /** Looked at again later: a hot run that may not leave Redis yet (see retirable), re-scored. */
  async postpone(runId: string, at: number): Promise<void> {
    await this.redis.zadd(ARCHIVE_HOT_KEY, 'XX', at, runId);
  }

  /** The archive does not hold what Redis does: back to the backlog, out of the hot set. */
  async unconfirmed(run: RunRecord): Promise<void> {
    await sendCommands(this.redis, [
      ['zadd', ARCHIVE_BACKLOG_KEY, Date.parse(run.updatedAt), run.id],
      ['zrem', ARCHIVE_HOT_KEY, run.id],
    ]);
  }

  /** The run's keys are gone (expired, or dropped): out of both sets. */
  async forget(runId: string): Promise<void> {
    await sendCommands(this.redis, [
      ['zrem', ARCHIVE_BACKLOG_KEY, runId],
      ['zrem', ARCHIVE_HOT_KEY, runId],
    ]);
  }

  /**
   * Drops every key of the run (one slot: one script), then forgets it; only after the
   * archive confirmed the revision Redis holds. `lastEventId` is that revision's last
   * event: every change after a finish appends one, so a change that landed since the
   * check keeps the keys (the next pass archives it first). Returns whether it dropped.
   */
  async drop(runId: string, lastEventId: string | undefined): Promise<boolean> {
    const k = runKeys(runId);
    const others = Object.values(k).filter((key) => key !== k.events);
    const dropped = await this.scripts.dropRun({ events: k.events, others }, { lastEventId: lastEventId ?? '' });
    if (dropped !== 1) return false;
    await this.forget(runId);
    return true;
  }
}
