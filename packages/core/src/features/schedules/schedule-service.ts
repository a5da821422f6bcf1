import { randomUUID } from 'node:crypto';
import type {
  AuditAction,
  CreateScheduleBody,
  PatchScheduleBody,
  Principal,
  ScheduleFiring,
  ScheduleRecord,
  ScheduleView,
} from '@rein/contract';
import { NEXT_FIRINGS, type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import type { AgentCatalog } from '@rein/define/internal';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import { fireJobSchema, fireTimeOf, SCHEDULE_FIRE, type ScheduleTimers } from '../../adapters/queue/schedule-queue.js';
import type { AuditLog } from '../../adapters/redis/audit-log.js';
import type { ScheduleStore } from '../../adapters/redis/schedule-store.js';
import { holdsRole } from '../../policy/approvals/decision-rights.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import {
  checkCron,
  isMissed,
  latestFireAt,
  missedFirings,
  nextFireAt,
  nextFireTimes,
  scheduledRunId,
} from '../../policy/run/schedule-cron.js';
import { ConflictError, NotFoundError, ReinError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import type { SignIns, Standing } from '../identity/sign-ins.js';
import type { RunService } from '../runs/run-service.js';
import { runView } from '../runs/run-service.js';

export interface ScheduleServiceDeps {
  store: ScheduleStore;
  timers: ScheduleTimers;
  runs: Pick<RunService, 'submit'>;
  runStore: Pick<RunRepository, 'get' | 'getMany'>;
  agents: AgentCatalog;
  metrics: Metrics;
  logger: Logger;
  /** Schedules one tenant may hold. */
  perTenant: number;
  /** The decision log: creations, edits, deletions and pauses of schedules. */
  audit: Pick<AuditLog, 'append'>;
  /**
   * The identities the fleet accepts now (REIN_API_KEYS, without their secrets): a firing
   * runs only while its owner is one of them with every role the schedule runs with.
   * Undefined (this process knows no keys): no firing can be checked, so none starts.
   */
  identities: readonly Principal[] | undefined;
  /**
   * Company sign-in, when it is on (REIN_OIDC_ISSUER): an owner with no key stands while
   * their latest sign-in is recent and carries the schedule's roles (features/identity/sign-ins.ts).
   */
  signIns?: Pick<SignIns, 'standing'>;
  now?: () => number;
}

/** What one firing came to (the fire job's result). */
export type FireResult = 'started' | 'replayed' | 'skipped' | 'missed' | 'paused' | 'failed' | 'disabled' | 'gone';

/** Why the owner may no longer have runs started as them, or null while they may. */
export function ownerStanding(identities: readonly Principal[], owner: Principal): Standing | null {
  const keys = identities.filter((i) => i.tenantId === owner.tenantId && i.userId === owner.userId);
  if (keys.length === 0)
    return { code: 'owner_key_missing', reason: `no key of user ${owner.userId} in tenant ${owner.tenantId} exists any more` };
  if (keys.some((k) => owner.roles.every((r) => k.roles.includes(r)))) return null;
  return {
    code: 'owner_roles_changed',
    reason: `user ${owner.userId} no longer holds every role the schedule runs with (${owner.roles.join(', ')})`,
  };
}
/** A schedule's change in its tenant's decision log. */
function audit(
  deps: Pick<ScheduleServiceDeps, 'audit'>,
  actor: string,
  action: AuditAction,
  s: ScheduleRecord,
  data: Record<string, unknown>,
) {
  return deps.audit.append([{ tenantId: s.owner.tenantId, actor, action, subject: { scheduleId: s.id }, data }]);
}

/** Firings: a worker took one; the owner's standing, the overlap and catch-up rules decide whether its run starts. */
function scheduleFiring(deps: ScheduleServiceDeps) {
  const now = deps.now ?? Date.now;
  const iso = (ms: number) => new Date(ms).toISOString();

  /** Null while the owner stands by a key with the schedule's roles, or else by their company sign-ins; else why not. */
  async function standingOf(owner: Principal): Promise<Standing | null> {
    const byKey = deps.identities ? ownerStanding(deps.identities, owner) : null;
    if (deps.identities && !byKey) return null;
    if (!deps.signIns) return byKey;
    const bySignIn = await deps.signIns.standing(owner);
    // A person with a key but no sign-in is told about the key, not about the provider.
    return bySignIn && byKey?.code === 'owner_roles_changed' && bySignIn.code === 'owner_key_missing' ? byKey : bySignIn;
  }

  /** The firing found its owner without the key or roles it runs with: it stops until someone enables it again. */
  async function pause(s: ScheduleRecord, base: Pick<ScheduleFiring, 'scheduledFor' | 'at'>, why: { code: string; reason: string }) {
    await deps.store.put({ ...s, enabled: false, paused: { at: base.at, ...why }, updatedAt: base.at });
    await deps.timers.remove(s.id);
    await record(s, { ...base, outcome: 'paused', reason: `${why.code}: ${why.reason}` });
    await audit(deps, 'system', 'schedule.paused', s, { code: why.code, reason: why.reason, owner: s.owner.userId });
  }

  async function record(s: ScheduleRecord, firing: ScheduleFiring): Promise<void> {
    await deps.store.recordFiring(s.id, firing);
    deps.metrics.scheduleFirings.inc({ outcome: firing.outcome });
    deps.logger.info({ scheduleId: s.id, ...firing }, `schedule firing ${firing.outcome}`);
  }

  /** The run the previous firing started, if it is still active (what `overlap: skip` waits out). */
  async function activeRun(s: ScheduleRecord): Promise<RunRecord | null> {
    const last = await deps.store.lastRun(s.id);
    const run = last ? await deps.runStore.get(last) : null;
    return run && !TERMINAL_STATUSES.includes(run.status) ? run : null;
  }

  return {
    /**
     * A worker took the firing of `scheduleId` for `scheduledFor` (ms) at `takenAt` (ms): start
     * its run, or record why not.
     */
    async fire(scheduleId: string, scheduledFor: number, takenAt?: number): Promise<FireResult> {
      const s = await deps.store.get(scheduleId);
      if (!s) {
        // Deleted while its timer was in flight (or the record was lost): nothing may fire it again.
        await deps.timers.remove(scheduleId).catch(() => {});
        return 'gone';
      }
      if (!s.enabled) {
        // A PATCH that lost a race with another left its timer on: a disabled schedule keeps none.
        await deps.timers.remove(scheduleId).catch(() => {});
        return 'disabled';
      }
      const at = now();
      deps.metrics.scheduleLag.observe(Math.max(0, at - scheduledFor) / 1000);
      if (!deps.identities && !deps.signIns) {
        // Not the owner's doing: the schedule stays on, and a process that knows the keys will start it.
        await record(s, { scheduledFor: iso(scheduledFor), at: iso(at), outcome: 'failed', reason: 'owner_unverifiable' });
        return 'failed';
      }
      const standing = await standingOf(s.owner);
      if (standing) {
        await pause(s, { scheduledFor: iso(scheduledFor), at: iso(at) }, standing);
        return 'paused';
      }
      let fireAt = scheduledFor;
      const missed = isMissed(s.cron, s.timezone, scheduledFor, at);
      if (missed) {
        if (s.catchUp === 'none') {
          await record(s, {
            scheduledFor: iso(scheduledFor),
            at: iso(at),
            outcome: 'missed',
            reason: 'catchUp none',
            missed: missedFirings(s.cron, s.timezone, scheduledFor, at + 1),
          });
          return 'missed';
        }
        // One run for everything missed: the latest fire time that had passed when the job was
        // taken. A later one has a job of its own (the queue plans the next firing after the time
        // it hands this job out), and would otherwise run twice: once here, once on its own.
        fireAt = latestFireAt(s.cron, s.timezone, Math.min(at, takenAt ?? at));
      }
      // By the firing's own fire time, not the catch-up's: a retry of this job later on computes
      // another latest fire time, but must find the run it may already have created.
      const runId = scheduledRunId(s.id, scheduledFor);
      const base = { scheduledFor: iso(fireAt), at: iso(at) };
      if (s.overlap === 'skip') {
        const busy = await activeRun(s);
        if (busy && busy.id !== runId) {
          await record(s, { ...base, outcome: 'skipped', runId: busy.id, reason: `run ${busy.id} is still ${busy.status}` });
          return 'skipped';
        }
      }
      try {
        const { created } = await deps.runs.submit(
          s.owner,
          {
            agent: s.agent,
            input: s.input,
            metadata: { ...s.metadata, scheduleId: s.id, scheduledFor: base.scheduledFor },
            ...(s.limits ? { limits: s.limits } : {}),
            // A session's schedule waits its turn behind a run still in the session, never cuts in.
            ...(s.sessionId ? { sessionId: s.sessionId, ifBusy: 'enqueue' as const } : {}),
          },
          undefined,
          undefined,
          { runId },
        );
        await deps.store.setLastRun(s.id, runId);
        if (!created) return 'replayed';
        await record(s, {
          ...base,
          outcome: 'started',
          runId,
          ...(missed
            ? {
                reason: `catch-up of the firing due ${iso(scheduledFor)}`,
                missed: missedFirings(s.cron, s.timezone, scheduledFor, fireAt),
              }
            : {}),
        });
        return 'started';
      } catch (err) {
        // A refusal (quota, ceiling, unknown agent) will not change on a retry of this firing: record it.
        if (!(err instanceof ReinError) || err.retryable || (err.status ?? 500) >= 500) throw err;
        await record(s, { ...base, outcome: 'failed', reason: err.code });
        return 'failed';
      }
    },
  };
}

/**
 * Agents on a schedule: CRUD on behalf of a caller, and the firing a worker takes from
 * a schedule's BullMQ job scheduler. A firing submits the schedule's run as its owner
 * (tenant, user, roles: quotas apply as to any run) under an id derived from the schedule
 * and the fire time, so however many processes take it, one run starts.
 *
 * The owner is who last decided what the schedule runs: its creator, or whoever edited it
 * since (an admin's edit of a user's schedule makes the admin its owner, so nobody's input
 * runs as someone else). Only disabling it leaves the owner as it is: that runs nothing.
 */
export function createScheduleService(deps: ScheduleServiceDeps) {
  const now = deps.now ?? Date.now;
  const iso = (ms: number) => new Date(ms).toISOString();

  /** A user manages their own schedules, an admin the tenant's; anyone else gets a 404 as for a missing one. */
  const mayManage = (p: Principal, s: ScheduleRecord) =>
    s.owner.tenantId === p.tenantId && (s.owner.userId === p.userId || holdsRole(p.roles, 'admin'));

  async function visible(principal: Principal, id: string): Promise<ScheduleRecord> {
    const s = await deps.store.get(id);
    if (!s || !mayManage(principal, s)) throw new NotFoundError(`schedule ${id}`);
    return s;
  }

  const view = ({ schemaVersion: _v, owner, ...s }: ScheduleRecord): ScheduleView => ({
    ...s,
    userId: owner.userId,
    nextRunAt: s.enabled ? iso(nextFireAt(s.cron, s.timezone, now())) : null,
  });

  return {
    async create(principal: Principal, body: CreateScheduleBody): Promise<ScheduleView> {
      checkCron(body.cron, body.timezone);
      const agent = deps.agents.get(body.agent ?? deps.agents.defaultAgent).name; // 400 unknown_agent
      const at = iso(now());
      const s: ScheduleRecord = {
        schemaVersion: 1,
        id: randomUUID(),
        owner: { tenantId: principal.tenantId, userId: principal.userId, roles: principal.roles },
        agent,
        input: body.input,
        cron: body.cron,
        timezone: body.timezone,
        overlap: body.overlap,
        catchUp: body.catchUp,
        metadata: body.metadata ?? {},
        ...(body.limits ? { limits: body.limits } : {}),
        enabled: body.enabled,
        ...(body.sessionId ? { sessionId: body.sessionId } : {}),
        createdAt: at,
        updatedAt: at,
      };
      // The record first: a timer that fires before it exists would find nothing to run.
      if (!(await deps.store.add(s, deps.perTenant)))
        throw new ConflictError('too_many_schedules', `tenant ${principal.tenantId} already has ${deps.perTenant} schedules (the limit)`);
      if (s.enabled) await deps.timers.upsert(s);
      await audit(deps, principal.userId, 'schedule.created', s, {
        agent,
        cron: s.cron,
        timezone: s.timezone,
        enabled: s.enabled,
        ...(s.sessionId ? { sessionId: s.sessionId } : {}),
      });
      return view(s);
    },

    async list(principal: Principal): Promise<{ schedules: ScheduleView[] }> {
      return { schedules: (await deps.store.forTenant(principal.tenantId)).filter((s) => mayManage(principal, s)).map(view) };
    },

    /** The schedule, its latest firings and the runs they started (those still kept). */
    async get(principal: Principal, id: string) {
      const s = await visible(principal, id);
      const history = await deps.store.history(id);
      const ids = [...new Set(history.flatMap((f) => (f.outcome === 'started' && f.runId ? [f.runId] : [])))];
      const runs = (await deps.runStore.getMany(ids)).filter((r): r is RunRecord => r !== null);
      const nextFirings = s.enabled ? nextFireTimes(s.cron, s.timezone, now(), NEXT_FIRINGS).map(iso) : [];
      return { ...view(s), history, runs: runs.map((r) => runView(r, [])), nextFirings };
    },

    async patch(principal: Principal, id: string, body: PatchScheduleBody): Promise<ScheduleView> {
      const s = await visible(principal, id);
      // Whoever decides what it runs from now on owns it; disabling alone decides nothing.
      const owns = !(body.enabled === false && Object.keys(body).length === 1);
      const owner: Principal = owns ? { tenantId: principal.tenantId, userId: principal.userId, roles: principal.roles } : s.owner;
      const { paused, ...rest } = { ...s, ...body, owner, updatedAt: iso(now()) };
      const next: ScheduleRecord = rest.enabled || !paused ? rest : { ...rest, paused };
      checkCron(next.cron, next.timezone);
      await deps.store.put(next);
      await audit(deps, principal.userId, 'schedule.updated', next, {
        fields: Object.keys(body).sort(),
        owner: owner.userId,
        ...(owner.userId !== s.owner.userId ? { previousOwner: s.owner.userId } : {}),
      });
      // A firing racing this sees either record; one that reads the disabled one does nothing.
      if (next.enabled) await deps.timers.upsert(next);
      else await deps.timers.remove(id);
      return view(next);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const s = await visible(principal, id);
      await deps.timers.remove(id);
      if (await deps.store.remove(s)) await audit(deps, principal.userId, 'schedule.deleted', s, { owner: s.owner.userId });
    },

    ...scheduleFiring(deps),
  };
}

export type ScheduleService = ReturnType<typeof createScheduleService>;

/** A schedule's firing: its run's id comes from the schedule and the fire time, so a firing taken twice starts one run. */
export const scheduleJobs = (schedules: Pick<ScheduleService, 'fire'>): JobHandlers<typeof SCHEDULE_FIRE.name> => ({
  [SCHEDULE_FIRE.name]: {
    schema: fireJobSchema,
    run: async ({ scheduleId }, { job }) => `firing ${await schedules.fire(scheduleId, fireTimeOf(job), job.processedOn)}`,
  },
});
