import type { Principal, PromoteBody, UpgradeAnswer, UpgradeBody, VersionList, VersionView } from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';
import { type Enqueue, type JobPayloads, jobRoute } from '../../adapters/queue/job-catalog.js';
import type { AuditLog } from '../../adapters/redis/audit-log.js';
import type { VersionDirectory } from '../../adapters/redis/version-directory.js';
import { holdsRole, isOperator } from '../../policy/approvals/decision-rights.js';
import type { JobQueue } from '../../policy/ports/job-queue.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import { currentVersion } from '../../policy/run/version-route.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

export interface VersionServiceDeps {
  directory: VersionDirectory;
  store: Pick<RunRepository, 'get'>;
  enqueue: Enqueue;
  /** The versions' step queues: what waits on each, and an upgrade's move of it. */
  queues: Pick<JobQueue<JobPayloads>, 'jobCounts' | 'moveJobs'>;
  logger: Logger;
  /** Promotions and upgrades go to the deciding operator's tenant's decision log (they are fleet-wide: no tenant owns them). */
  audit?: Pick<AuditLog, 'append'>;
}

/** Runs kicked per round trip by an upgrade. */
const UPGRADE_BATCH = 50;

/**
 * The fleet's app versions: list them, promote one (where new runs go, instant rollback),
 * upgrade one (its runs move to another version at their next step). Versions are
 * fleet-wide, so promote and upgrade need the `operator` role (like the queue board); a
 * tenant's admin may list them, counting its own tenant's runs and approvals only. A
 * version must have been seen (some process ran it) to be named: a made-up string is a
 * 404, never a queue or a label.
 */
export function createVersionService(deps: VersionServiceDeps) {
  const { directory } = deps;
  const operator = (principal: Principal) => {
    if (!isOperator(principal.roles)) throw new ForbiddenError('app versions are fleet-wide: managing them needs the operator role');
  };
  const known = async (version: string) => {
    if (!(await directory.seen(version))) throw new NotFoundError(`app version ${version}`);
  };

  async function list(principal: Principal): Promise<VersionList> {
    const fleetWide = isOperator(principal.roles);
    if (!fleetWide && !holdsRole(principal.roles, 'admin'))
      throw new ForbiddenError('app versions are listed for operators and tenant admins');
    const [facts, fleet] = await Promise.all([directory.list(fleetWide ? undefined : principal.tenantId), directory.fresh()]);
    const current = currentVersion(fleet, directory.own);
    // Queues hold every tenant's jobs: counted for operators only.
    const jobs = fleetWide ? await Promise.all(facts.map((f) => deps.queues.jobCounts(f.version))) : [];
    return {
      current,
      versions: facts.map(
        (f, i): VersionView => ({
          version: f.version,
          current: f.version === current,
          promoted: f.version === fleet.promoted,
          workers: f.workers,
          apis: f.apis,
          runs: f.runs,
          pendingApprovals: f.pendingApprovals,
          ...(fleetWide ? { jobs: jobs[i] ?? 0 } : {}),
          ...(fleet.upgrades[f.version] ? { upgradingTo: fleet.upgrades[f.version] } : {}),
          firstSeen: new Date(f.firstSeen).toISOString(),
          lastSeen: new Date(f.lastSeen).toISOString(),
        }),
      ),
    };
  }

  /** A version no worker runs now gets new runs only with `force` (they would wait for one). */
  async function liveWorkers(version: string): Promise<number> {
    return (await directory.list()).find((f) => f.version === version)?.workers ?? 0;
  }

  return {
    list,

    async promote(principal: Principal, version: string, body: PromoteBody): Promise<VersionList> {
      operator(principal);
      await known(version);
      if (!body.force && (await liveWorkers(version)) === 0)
        throw new ConflictError(
          'version_not_live',
          `no worker of app version ${version} is alive; send {"force": true} to promote it anyway`,
        );
      await directory.promote(version);
      deps.logger.warn({ version, by: principal.userId }, 'app version promoted');
      await deps.audit?.append([
        {
          tenantId: principal.tenantId,
          actor: principal.userId,
          action: 'version.promoted',
          subject: {},
          data: { version, force: !!body.force },
        },
      ]);
      return list(principal);
    },

    /**
     * Every unfinished run of `from` moves to `to` (default: the current version) at its
     * next step; each is kicked so that it does. Every job still waiting on `from`'s queues
     * moves too, whatever its kind (a finished run's undo or archive job included).
     */
    async upgrade(principal: Principal, from: string, body: UpgradeBody): Promise<UpgradeAnswer> {
      operator(principal);
      await known(from);
      const fleet = await directory.fresh();
      const to = body.to ?? currentVersion(fleet, directory.own);
      // New runs of the promoted version would be moved away at once: promote the target instead.
      if (to === from || fleet.promoted === from)
        throw new ConflictError('version_not_upgradable', `app version ${from} is where new runs go: promote another first`);
      await known(to);
      if ((await liveWorkers(to)) === 0)
        throw new ConflictError('version_not_live', `no worker of app version ${to} is alive to take the runs of ${from}`);
      await directory.upgrade(from, to);
      // Queued jobs wait on the old version's queue and a parked run has none: a repair job per run (routed to `to`) moves each now.
      const ids = await directory.runIds(from);
      let runs = 0;
      for (let i = 0; i < ids.length; i += UPGRADE_BATCH) {
        const batch = await Promise.all(ids.slice(i, i + UPGRADE_BATCH).map((id) => deps.store.get(id)));
        for (const run of batch) {
          if (!run || TERMINAL_STATUSES.includes(run.status)) continue;
          await deps.enqueue(
            'repair',
            { runId: run.id, step: run.step, version: run.version, tenantId: run.tenantId },
            { route: jobRoute(run) },
          );
          runs++;
        }
      }
      const jobs = await deps.queues.moveJobs(from, to);
      deps.logger.warn({ from, to, runs, jobs, by: principal.userId }, 'app version upgrade requested');
      await deps.audit?.append([
        { tenantId: principal.tenantId, actor: principal.userId, action: 'version.upgraded', subject: {}, data: { from, to, runs, jobs } },
      ]);
      return { from, to, runs, jobs };
    },
  };
}

export type VersionService = ReturnType<typeof createVersionService>;
