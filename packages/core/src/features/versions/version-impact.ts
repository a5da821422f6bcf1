import type { Principal, RunRecord, VersionImpact, VersionManifest } from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';
import type { ScheduleStore } from '../../adapters/redis/schedule-store.js';
import type { VersionDirectory } from '../../adapters/redis/version-directory.js';
import { changedNames, toolDifference, withdrawalUnder } from '../../policy/app/version-manifest.js';
import { isOperator } from '../../policy/approvals/decision-rights.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import { currentVersion } from '../../policy/run/version-route.js';
import { ForbiddenError, ReinError } from '../../shared/errors.js';

export interface VersionImpactDeps {
  directory: Pick<VersionDirectory, 'manifest' | 'runEntries' | 'fresh' | 'own'>;
  store: Pick<RunRepository, 'getMany' | 'approvals'>;
  schedules: Pick<ScheduleStore, 'all'>;
}

/** Items listed per kind (the counts cover everything). */
const LISTED = 200;
/** Runs read per round trip. */
const BATCH = 100;

/** A version registered no manifest: no process of it started since manifests were kept (or it never existed). */
export class VersionNotRegisteredError extends ReinError {
  override readonly name = 'VersionNotRegisteredError';
  constructor(version: string) {
    super('version_not_registered', `app version ${version} is not registered: no process of it started and said what it serves`, {
      status: 404,
    });
  }
}

/**
 * What promoting a candidate version and upgrading another's runs to it would change —
 * read-only: the definitions that differ (by digest), the pending and approved approvals
 * an upgrade would withdraw (the same rule the upgrade applies: the tool's digest must be
 * the one the approval was asked under), unfinished runs whose agent changed or is gone,
 * schedules whose agent changed or is gone. Operators only (versions are fleet-wide); the
 * counts are the fleet's, the items listed the caller's tenant's.
 */
export function createVersionImpact(deps: VersionImpactDeps) {
  const manifest = async (version: string): Promise<VersionManifest> => {
    const m = await deps.directory.manifest(version);
    if (!m) throw new VersionNotRegisteredError(version);
    return m;
  };

  return async function impact(principal: Principal, version: string, against?: string): Promise<VersionImpact> {
    if (!isOperator(principal.roles)) throw new ForbiddenError('app versions are fleet-wide: their impact needs the operator role');
    const base = against ?? currentVersion(await deps.directory.fresh(), deps.directory.own);
    const [after, before] = await Promise.all([manifest(version), manifest(base)]);
    const agents = changedNames(before.agents, after.agents);
    const agentWhy = (agent: string) =>
      agents.removed.includes(agent) || !(agent in after.agents)
        ? ('agent_removed' as const)
        : agents.changed.includes(agent)
          ? ('agent_changed' as const)
          : null;
    const mine = (tenantId: string) => tenantId === principal.tenantId;
    const out: VersionImpact = {
      version,
      against: base,
      agentsServed: Object.keys(after.agents).sort(),
      tools: changedNames(before.tools, after.tools),
      agents,
      mcpServers: {
        added: after.mcpServers.filter((s) => !before.mcpServers.includes(s)),
        removed: before.mcpServers.filter((s) => !after.mcpServers.includes(s)),
      },
      withdrawn: { count: 0, items: [] },
      runs: { count: 0, items: [] },
      schedules: { count: 0, items: [] },
    };

    const entries = (await deps.directory.runEntries(base)).filter((e) => !TERMINAL_STATUSES.includes(e.status));
    for (let i = 0; i < entries.length; i += BATCH) {
      const runs = (await deps.store.getMany(entries.slice(i, i + BATCH).map((e) => e.runId))).filter(
        (r): r is RunRecord => r !== null && !TERMINAL_STATUSES.includes(r.status),
      );
      // One batch's approvals asked for at once: a fleet of parked runs is read in a round trip per batch, not per run.
      const approvalsOf = await Promise.all(runs.map((r) => deps.store.approvals(r.id)));
      for (const [i, run] of runs.entries()) {
        const why = agentWhy(run.agent);
        if (why) {
          out.runs.count++;
          if (mine(run.tenantId) && out.runs.items.length < LISTED)
            out.runs.items.push({ runId: run.id, agent: run.agent, status: run.status, why });
        }
        // Only what can still run is judged, as an upgrade judges it: the current step's tool approvals.
        const pendingAt = (approvalsOf[i] ?? []).filter(
          (a) => (a.status === 'pending' || a.status === 'approved') && a.step === run.step && (a.kind ?? 'tool') === 'tool',
        );
        for (const a of pendingAt) {
          const withdrawal = withdrawalUnder(a.toolName, a.toolDigest, after);
          if (!withdrawal) continue;
          out.withdrawn.count++;
          if (mine(run.tenantId) && out.withdrawn.items.length < LISTED)
            out.withdrawn.items.push({
              runId: run.id,
              approvalId: a.id,
              tool: a.toolName,
              status: a.status,
              why: withdrawal,
              difference: toolDifference(a.toolName, a.toolDigest, before, after),
            });
        }
      }
    }

    for await (const s of deps.schedules.all()) {
      const why = agentWhy(s.agent);
      if (!why) continue;
      out.schedules.count++;
      if (mine(s.owner.tenantId) && out.schedules.items.length < LISTED)
        out.schedules.items.push({ scheduleId: s.id, agent: s.agent, why });
    }
    return out;
  };
}
export type VersionImpactCheck = ReturnType<typeof createVersionImpact>;
