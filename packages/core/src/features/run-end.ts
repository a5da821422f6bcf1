import type { RunRecord } from '@rein/contract';

/**
 * What a feature plugs into a run's end. The runtime lists the features' plugs once, in
 * the order they must run (process/run-end-hooks.ts); each plug says for itself which runs
 * concern it. The reaper runs the hooks of a run again when a plug threw, so each plug is
 * idempotent.
 */
export interface RunEndPlug {
  /** The feature, named in logs. */
  feature: string;
  /** The run reached a terminal status. A throw leaves the run in the active-runs index for the reaper. */
  finished?(run: RunRecord): Promise<void>;
  /** A commit changed a live run's status or approvals (it did not finish it). A throw is the plug's to handle: the commit stands. */
  changed?(run: RunRecord): Promise<void>;
  /** An approval of a finished run (its saga's plan) was decided. */
  decided?(run: RunRecord): Promise<void>;
}
