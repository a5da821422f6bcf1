import { runKeys } from '../../shared/keys.js';
import type { RedisClient } from './redis.js';

/**
 * The Redis memory a run holds: MEMORY USAGE of each of its keys, counting every element
 * (SAMPLES 0) rather than extrapolating from a few. One pipelined round trip; meant to be
 * taken once per run, when it finishes, not per step.
 */
export async function runFootprint(redis: RedisClient, runId: string): Promise<number> {
  // At a run's finish its effect ledger is gone, its remote tasks are settled and no compensation exists yet: not asked for.
  const { effects: _dropped, remoteTasks: _settled, compensation: _later, ...kept } = runKeys(runId);
  const pipeline = redis.pipeline();
  for (const key of Object.values(kept)) pipeline.memory('USAGE', key, 'SAMPLES', 0);
  const replies = (await pipeline.exec()) ?? [];
  return replies.reduce((sum, [err, bytes]) => sum + (err ? 0 : Number(bytes ?? 0)), 0);
}
