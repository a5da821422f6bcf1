import { type Effect, effectSchema } from '@rein/contract';
import type { EffectLedger, LedgerScope } from '../../policy/ports/effect-ledger.js';
import { runKeys } from '../../shared/keys.js';
import { EffectWrite, type ScriptGateway, scriptGateway } from './lua-scripts.js';
import type { RedisClient } from './redis.js';

/**
 * Intent and result of every write tool's call (I4). An intent without a result
 * means a worker died mid-call: the caller decides whether re-running is safe. The run's
 * terminal commit marks it finished and drops the ledger; a step's late write (a worker
 * still busy with a cancelled run) is refused then, so the ledger is never written back
 * and no effect starts after the finish: the worker records what did happen in the trace
 * (RunStore.recordAfterFinish). Undoes of the finished run write under keys of their own.
 * Each write sets a TTL, so a ledger cannot outlive its run for long.
 */
export class RedisEffectLedger implements EffectLedger {
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;

  constructor(
    redis: RedisClient,
    private readonly ttlSeconds = 30 * 86_400,
  ) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  async get(runId: string, key: string): Promise<Effect | null> {
    const raw = await this.redis.hget(runKeys(runId).effects, key);
    return raw ? effectSchema.parse(JSON.parse(raw)) : null;
  }

  private async write(runId: string, mode: 'intent' | 'result', key: string, effect: Effect, scope: LedgerScope) {
    const k = runKeys(runId);
    return this.scripts.recordEffect(k, {
      mode,
      key,
      entry: JSON.stringify(effect),
      ttlSeconds: this.ttlSeconds,
      liveOnly: scope === 'step',
    });
  }

  /**
   * Records the intent unless something is recorded; returns what was there before, or
   * `finished` (nothing recorded, and the call must not start) when a step's run has finished.
   */
  async recordIntent(runId: string, key: string, tool: string, scope: 'undo'): Promise<Effect | null>;
  async recordIntent(runId: string, key: string, tool: string, scope?: 'step'): Promise<Effect | null | 'finished'>;
  async recordIntent(runId: string, key: string, tool: string, scope: LedgerScope = 'step'): Promise<Effect | null | 'finished'> {
    const [result, held] = await this.write(runId, 'intent', key, { state: 'intent', tool, at: new Date().toISOString() }, scope);
    if (result === EffectWrite.RunFinished) return 'finished';
    return result === EffectWrite.Held && held ? effectSchema.parse(JSON.parse(held)) : null;
  }

  /**
   * Adds a handle to a call's intent (what it started elsewhere, to find again after a
   * crash); false when the run finished meanwhile. Only the call holding the intent writes it.
   */
  async recordHandle(runId: string, key: string, tool: string, handle: string): Promise<boolean> {
    const intent: Effect = { state: 'intent', tool, at: new Date().toISOString(), handle };
    const [result] = await this.write(runId, 'result', key, intent, 'step');
    return result === EffectWrite.Written;
  }

  /** Withdraws an intent whose call never started (its breaker refused it), so a retry is not "uncertain". */
  async clearIntent(runId: string, key: string): Promise<void> {
    await this.redis.hdel(runKeys(runId).effects, key);
  }

  /** Records the result; false when a step's run finished meanwhile (then the ledger is gone and stays gone). */
  async recordResult(
    runId: string,
    key: string,
    tool: string,
    ok: boolean,
    observation: string,
    scope: LedgerScope = 'step',
  ): Promise<boolean> {
    const done: Effect = { state: 'done', tool, at: new Date().toISOString(), ok, observation };
    const [result] = await this.write(runId, 'result', key, done, scope);
    return result === EffectWrite.Written;
  }
}
