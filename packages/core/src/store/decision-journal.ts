import { runKeys } from '../keys.js';
import type { RedisClient } from '../redis.js';
import { type Decision, decisionSchema, type Snapshot, snapshotSchema } from '../schemas/run.js';

/**
 * The model's reply per step, stored before any tool runs (invariant 3). The first
 * writer wins, so every attempt of a step acts on the same decision and its tokens
 * are counted once.
 */
export class DecisionJournal {
  constructor(
    private readonly redis: RedisClient,
    private readonly snapshotTtlSeconds = 30 * 86_400,
  ) {}

  /** Keeps what was sent and received for a model call (every attempt's last one per step). */
  async snapshot(runId: string, snapshot: Snapshot): Promise<void> {
    const key = runKeys(runId).snapshots;
    await this.redis
      .multi()
      .hset(key, String(snapshot.step), JSON.stringify(snapshotSchema.parse(snapshot)))
      .expire(key, this.snapshotTtlSeconds)
      .exec();
  }

  async snapshots(runId: string): Promise<Snapshot[]> {
    const raw = await this.redis.hvals(runKeys(runId).snapshots);
    return raw.map((s) => snapshotSchema.parse(JSON.parse(s))).sort((a, b) => a.step - b.step);
  }

  async get(runId: string, step: number): Promise<Decision | null> {
    const raw = await this.redis.hget(runKeys(runId).decisions, String(step));
    return raw ? decisionSchema.parse(JSON.parse(raw)) : null;
  }

  /** Records `decision` unless one exists; returns the journaled one either way. */
  async record(runId: string, decision: Decision): Promise<Decision> {
    const key = runKeys(runId).decisions;
    const won = await this.redis.hsetnx(key, String(decision.step), JSON.stringify(decisionSchema.parse(decision)));
    if (won) return decision;
    const existing = await this.get(runId, decision.step);
    if (!existing) throw new Error(`decision journal lost step ${decision.step} of run ${runId}`);
    return existing;
  }
}
