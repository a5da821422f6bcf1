import type { Approval, RunRecord } from '@rein/contract';
import type { Tool } from '@rein/define/internal';
import { approvalEvent } from '../adapters/redis/approval-feed.js';
import { moveRun } from '../policy/run/run-transitions.js';
import { versionVerdict, withdrawnOnMove } from '../policy/run/version-route.js';
import { runLogger, type StepClock, type StepProcessorDeps } from './step-deps.js';

export type PlaceDeps = Pick<StepProcessorDeps, 'store' | 'applier' | 'metrics' | 'logger' | 'versions'> & {
  tools: Map<string, Tool>;
  clock: StepClock;
};

/**
 * Whether this worker runs the run's step (`own`), sent it on to its version's workers
 * (`rerouted`), or moved the run to its own version first (`moved`: an upgrade), with the
 * approvals whose tool changed withdrawn in the same commit. The cached fleet state is
 * read again before anything but `own`: it may be up to a second behind an upgrade.
 */
export async function placeRun(deps: PlaceDeps, run: RunRecord, approvals: Approval[]): Promise<'own' | 'rerouted' | 'moved'> {
  const v = deps.versions;
  if (!v || versionVerdict(run, v.known(), v.own).kind === 'own') return 'own';
  const verdict = versionVerdict(run, await v.fresh(), v.own);
  if (verdict.kind === 'own') return 'own';
  const log = runLogger(deps.logger, run);
  if (verdict.kind === 'reroute') {
    const repair = { runId: run.id, step: run.step, version: run.version, tenantId: run.tenantId };
    await v.enqueue('repair', run.traceparent ? { ...repair, traceparent: run.traceparent } : repair, {
      route: { appVersion: verdict.to },
    });
    deps.metrics.versionReroutes.inc();
    log.warn({ to: verdict.to, own: v.own }, 'step job reached a worker of another version; sent on');
    return 'rerouted';
  }
  const at = deps.clock.iso();
  // A plan followed over later steps has its approval in an earlier step: read it too (a move is rare).
  const planApproval = run.plan?.approvalId;
  const judged =
    planApproval && !approvals.some((a) => a.id === planApproval)
      ? [...approvals, ...(await deps.store.approvalsById([planApproval])).filter((a) => a !== null)]
      : approvals;
  const withdrawn = withdrawnOnMove(run, judged, deps.tools, at);
  await deps.applier.apply(run, {
    kind: 'upgrade',
    change: moveRun(run, v.own, withdrawn, at),
    followUps: { feed: withdrawn.map((a) => approvalEvent(a, true)) },
  });
  log.info({ to: v.own, withdrawn: withdrawn.map((a) => a.id) }, 'run moved to another app version');
  return 'moved';
}
