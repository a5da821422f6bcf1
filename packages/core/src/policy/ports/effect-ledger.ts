import type { Effect } from '@rein/contract';

/** A step's calls write the ledger only while their run is live; an undo of a finished run writes it always. */
export type LedgerScope = 'step' | 'undo';

/**
 * Intent and result of every write tool's call (I4): an intent without a result means a
 * worker died mid-call. Once a run's terminal commit dropped its ledger, a step's writes
 * are refused (`finished`, false) and the ledger stays gone; undoes write always.
 */
export interface EffectLedger {
  get(runId: string, key: string): Promise<Effect | null>;
  /** Records the intent unless something is recorded; returns what was there, or `finished` (the call must not start). */
  recordIntent(runId: string, key: string, tool: string, scope: 'undo'): Promise<Effect | null>;
  recordIntent(runId: string, key: string, tool: string, scope?: 'step'): Promise<Effect | null | 'finished'>;
  /** Adds a handle to a call's intent; false when the run finished meanwhile. */
  recordHandle(runId: string, key: string, tool: string, handle: string): Promise<boolean>;
  /** Withdraws an intent whose call never started. */
  clearIntent(runId: string, key: string): Promise<void>;
  /** Records the result; false when a step's run finished meanwhile. */
  recordResult(runId: string, key: string, tool: string, ok: boolean, observation: string, scope?: LedgerScope): Promise<boolean>;
}
