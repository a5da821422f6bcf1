import type { RunRecord } from '@rein/contract';
import type { RunEndPlug } from '../features/run-end.js';
import type { FinishHooks } from '../step/apply-transition.js';

/**
 * The applier's finish hooks, made of the features' plugs. The applier is built before the
 * features that commit through it (the compensator, the tree, cohorts), so it takes this
 * board empty and the runtime plugs the features in once they exist — in one call, in the
 * order of the list it is given.
 */
export function createRunEndHooks(): FinishHooks & { plug(plugs: readonly RunEndPlug[]): void } {
  let board: readonly RunEndPlug[] = [];
  return {
    plug(plugs) {
      board = plugs;
    },
    async finished(run: RunRecord) {
      for (const p of board) await p.finished?.(run);
    },
    async changed(run: RunRecord) {
      for (const p of board) await p.changed?.(run);
    },
    async decided(run: RunRecord) {
      for (const p of board) await p.decided?.(run);
    },
  };
}
