import type { Approval, RunRecord, Versioning } from '@rein/contract';
import type { Tool } from '@rein/define/internal';
import type { FleetVersions } from '../app/fleet-versions.js';
import { toolDigest } from '../app/tool-digest.js';
import { approvedPlanSteps, planDigest } from '../step/plan.js';

/** What routing needs of a run (or of a job that names one). */
export interface VersionedRun {
  appVersion?: string | undefined;
  versioning?: Versioning | undefined;
}

/** Longest chain of upgrades followed (v1 → v2 → v3 …): a cycle an admin made cannot loop. */
const MAX_HOPS = 8;

/** Where new runs go: the promoted version, else the accepting API process's own. */
export const currentVersion = (fleet: FleetVersions, own: string): string => fleet.promoted ?? own;

/**
 * The version whose workers run a run's next job (pure). A pinned run stays on its
 * version unless an admin asked its version to upgrade (followed along a chain); an
 * `upgrade` run follows the current version (promoted, else the newest API's). A run
 * from before versions is taken by the version that routes it.
 */
export function routeVersion(run: VersionedRun, fleet: FleetVersions, own: string): string {
  if (run.versioning === 'upgrade') return fleet.promoted ?? fleet.newestApi ?? run.appVersion ?? own;
  let version = run.appVersion ?? own;
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    const next = fleet.upgrades[version];
    if (next === undefined || next === version) break;
    version = next;
  }
  return version;
}

/**
 * What a worker of version `own` does with a job of `run` (pure): run it (`own`), move the
 * run to its version first (`move`: an upgrade routed it here), or send it on to the
 * workers of the version it belongs to (`reroute`: it reached the wrong queue).
 */
export type VersionVerdict = { kind: 'own' } | { kind: 'move' } | { kind: 'reroute'; to: string };

export function versionVerdict(run: RunRecord, fleet: FleetVersions, own: string): VersionVerdict {
  const target = routeVersion(run, fleet, own);
  if (target !== own) return { kind: 'reroute', to: target };
  return (run.appVersion ?? own) === own ? { kind: 'own' } : { kind: 'move' };
}

/** The digest an approval would be asked under with `tools`: its tool's, or for a plan its steps' tools' (undefined: gone). */
function digestUnder(approval: Approval, tools: ReadonlyMap<string, Tool>): string | undefined {
  if (approval.kind === 'plan') {
    const steps = approvedPlanSteps(approval);
    return steps ? planDigest(steps, tools) : undefined;
  }
  const tool = tools.get(approval.toolName);
  return tool ? toolDigest(tool) : undefined;
}

/**
 * The approvals of a run moving to another version (pure): one stays, as decided or
 * pending, only if the new version's tool has the digest the approval was asked under
 * (same name, kind, schema, roles, policy; for a plan, every step's tool); any other pending or approved one is
 * withdrawn (`version_changed`), so an approved call never runs under a definition its
 * approver did not see. Only what can still run is judged: the approvals of the run's
 * current step and its plan's (an approved plan is followed over later steps); those of
 * calls already carried out stay as they were. Decided refusals (rejected, expired) stay: they run nothing.
 */
export function withdrawnOnMove(
  run: Pick<RunRecord, 'step' | 'plan'>,
  approvals: readonly Approval[],
  tools: ReadonlyMap<string, Tool>,
  at: string,
): Approval[] {
  return approvals
    .filter((a) => a.status === 'pending' || a.status === 'approved')
    .filter((a) => a.step === run.step || (a.kind === 'plan' && a.id === run.plan?.approvalId && run.plan.status !== 'rejected'))
    .filter((a) => a.toolDigest === undefined || a.toolDigest !== digestUnder(a, tools))
    .map((a) => ({
      ...a,
      status: 'withdrawn',
      reason: 'version_changed',
      decidedBy: 'rein',
      decidedAt: at,
      comment: 'the app version changed',
    }));
}
