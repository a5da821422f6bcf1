import { randomUUID } from 'node:crypto';
import { type RunStatus, type VersionManifest, versionManifestSchema } from '@rein/contract';
import type { FleetVersions } from '../../policy/app/fleet-versions.js';
import { VERSION_KEYS, versionManifestKey, versionRunsKey } from '../../shared/keys.js';
import { type RedisClient, type RedisCommand, sendCommands } from './redis.js';

/** A process's heartbeat is refreshed this often and lapses after HEARTBEAT_TTL_MS without one. */
export const HEARTBEAT_EVERY_MS = 5_000;
export const HEARTBEAT_TTL_MS = 15_000;
/** How old the fleet's version state read by a process may be: a promote reaches every process within it. */
export const FLEET_STATE_TTL_MS = 1_000;
/** Versions with no live process and no unfinished run, unseen this long, leave the directory (and the metrics). */
export const FORGET_AFTER_MS = 7 * 86_400_000;
/** At most this many versions are listed and labelled: a fleet runs a few at a time; older ones drop first. */
export const MAX_LISTED_VERSIONS = 20;
/** How long a version's manifest is kept after its last process started. */
export const MANIFEST_TTL_MS = 30 * 86_400_000;

export type VersionRole = 'api' | 'worker' | 'approver';

export interface LiveProcess {
  role: VersionRole;
  version: string;
  instance: string;
}

/** One version as the directory knows it, before the HTTP view is made of it. */
export interface VersionFacts {
  version: string;
  workers: number;
  apis: number;
  runs: Partial<Record<RunStatus, number>>;
  pendingApprovals: number;
  /** Runs that wait on a job of this version: queued, running, or parked with every approval decided (their resume). */
  onQueue: number;
  firstSeen: number;
  lastSeen: number;
}

/** An entry of a version's run index: its status, how many approvals it is parked on, and its tenant (last: it may hold `|`). */
export const versionRunEntry = (status: RunStatus, pending: number, tenantId: string) => `${status}|${pending}|${tenantId}`;

/**
 * Where the fleet's versions live in Redis: which one is promoted, which are being
 * upgraded, which processes of which version are alive (a heartbeat per process), and
 * when each version was first and last seen. Every process keeps a copy of the state no
 * older than FLEET_STATE_TTL_MS, refreshed in the background, so routing a job reads no
 * Redis (`known()`); `fresh()` reads it now, for the rare job that reached a queue its
 * state did not expect.
 */
export class VersionDirectory {
  readonly instance = randomUUID();
  private state: FleetVersions = { upgrades: {} };
  private beatAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    readonly own: string,
    private readonly role: VersionRole,
    /** A failed background refresh (Redis away: the runtime counts it into the outage). */
    private readonly onError: (err: Error) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts the heartbeat and the background refresh of the state; the first of each is awaited. */
  async start(): Promise<void> {
    await Promise.all([this.heartbeat(), this.fresh()]);
    this.timer = setInterval(() => {
      const beat = this.now() - this.beatAt >= HEARTBEAT_EVERY_MS - FLEET_STATE_TTL_MS / 2;
      Promise.all([beat ? this.heartbeat() : undefined, this.fresh()]).catch(this.onError);
    }, FLEET_STATE_TTL_MS);
    this.timer.unref();
  }

  /** The last state read (at most FLEET_STATE_TTL_MS old while Redis answers): no round trip. */
  known(): FleetVersions {
    return this.state;
  }

  /** The state read now. On a Redis error the last known state stands, and the error propagates. */
  async fresh(): Promise<FleetVersions> {
    const at = this.now();
    const [state, live, seen] = (await sendCommands(this.redis, [
      ['hgetall', VERSION_KEYS.state],
      ['zrangebyscore', VERSION_KEYS.live, at, '+inf'],
      ['hgetall', VERSION_KEYS.seen],
    ])) as [Record<string, string>, string[], Record<string, string>];
    const upgrades: Record<string, string> = {};
    for (const [field, value] of Object.entries(state ?? {})) if (field.startsWith('upgrade:')) upgrades[field.slice(8)] = value;
    const apis = parseLive(live).filter((p) => p.role === 'api');
    const firstSeen = (v: string) => Number(seen?.[`first:${v}`] ?? 0);
    const newestApi = apis.map((p) => p.version).sort((a, b) => firstSeen(b) - firstSeen(a))[0];
    this.state = { ...(state?.promoted ? { promoted: state.promoted } : {}), upgrades, ...(newestApi ? { newestApi } : {}) };
    return this.state;
  }

  /** This process is alive and runs `own`: its heartbeat, and the version's last (and maybe first) sighting. */
  async heartbeat(): Promise<void> {
    const at = this.now();
    this.beatAt = at;
    await sendCommands(this.redis, [
      ['zadd', VERSION_KEYS.live, at + HEARTBEAT_TTL_MS, `${this.role}|${this.own}|${this.instance}`],
      ['zremrangebyscore', VERSION_KEYS.live, '-inf', `(${at}`],
      ['hsetnx', VERSION_KEYS.seen, `first:${this.own}`, at],
      ['hset', VERSION_KEYS.seen, `last:${this.own}`, at],
      // A worker's own sighting: what a run waiting for its version was last served by.
      ...(this.role === 'worker' ? [['hset', VERSION_KEYS.seen, `worker:${this.own}`, at] as RedisCommand] : []),
    ]);
  }

  /** The live workers of `version` and when one was last seen (ms; undefined: never). */
  async workersOf(version: string): Promise<{ workers: number; lastWorkerAt?: number }> {
    const at = this.now();
    const [live, last] = (await sendCommands(this.redis, [
      ['zrangebyscore', VERSION_KEYS.live, at, '+inf'],
      ['hget', VERSION_KEYS.seen, `worker:${version}`],
    ])) as [string[], string | null];
    const workers = parseLive(live).filter((p) => p.role === 'worker' && p.version === version).length;
    return { workers, ...(last ? { lastWorkerAt: Number(last) } : {}) };
  }

  /** This process leaves: its heartbeat goes at once, so a drained version shows no worker. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.redis.zrem(VERSION_KEYS.live, `${this.role}|${this.own}|${this.instance}`).catch(() => 0);
  }

  /** New runs go to `version` on every API process (within FLEET_STATE_TTL_MS); its own upgrade, if any, is called off. */
  async promote(version: string): Promise<void> {
    await this.redis.multi().hset(VERSION_KEYS.state, 'promoted', version).hdel(VERSION_KEYS.state, `upgrade:${version}`).exec();
    await this.fresh();
  }

  /**
   * Runs of `from` move to `to` at their next step (routing follows it; the worker of `to`
   * moves each run). `to` is where they land: an upgrade of `to` itself is called off, so
   * two upgrades cannot send runs back and forth.
   */
  async upgrade(from: string, to: string): Promise<void> {
    await this.redis.multi().hset(VERSION_KEYS.state, `upgrade:${from}`, to).hdel(VERSION_KEYS.state, `upgrade:${to}`).exec();
    await this.fresh();
  }

  /** Whether any process of `version` was ever seen (a version nobody runs cannot be promoted or upgraded to by mistake). */
  async seen(version: string): Promise<boolean> {
    return (await this.redis.hexists(VERSION_KEYS.seen, `first:${version}`)) === 1;
  }

  /** Records what this version serves, for a month past its last start (a deploy's impact check compares two). */
  async register(manifest: VersionManifest): Promise<void> {
    await this.redis.set(versionManifestKey(manifest.version), JSON.stringify(manifest), 'PX', MANIFEST_TTL_MS);
  }

  /** What `version` serves, as its processes registered it (null: none registered, or unreadable). */
  async manifest(version: string): Promise<VersionManifest | null> {
    const raw = await this.redis.get(versionManifestKey(version));
    if (raw === null) return null;
    try {
      return versionManifestSchema.parse(JSON.parse(raw));
    } catch {
      return null;
    }
  }

  /** `version`'s unfinished runs: id → status, pending approvals and tenant. */
  async runEntries(version: string): Promise<Array<{ runId: string; status: RunStatus; pending: number; tenantId: string }>> {
    const all = await this.redis.hgetall(versionRunsKey(version));
    return Object.entries(all ?? {}).map(([runId, entry]) => {
      const [status, pending, ...tenant] = entry.split('|') as [RunStatus, string, ...string[]];
      return { runId, status, pending: Number(pending) || 0, tenantId: tenant.join('|') };
    });
  }

  /** The ids of `version`'s unfinished runs (what an upgrade kicks). */
  async runIds(version: string): Promise<string[]> {
    return this.redis.hkeys(versionRunsKey(version));
  }

  /**
   * Every version the directory knows, newest first, at most MAX_LISTED_VERSIONS: its
   * live processes, unfinished runs by status and pending approvals — of `tenantId`'s
   * runs only, when given (a tenant admin's view). A version with no process and no run
   * unseen for FORGET_AFTER_MS is forgotten here.
   */
  async list(tenantId?: string): Promise<VersionFacts[]> {
    const at = this.now();
    const [live, seen] = (await sendCommands(this.redis, [
      ['zrangebyscore', VERSION_KEYS.live, at, '+inf'],
      ['hgetall', VERSION_KEYS.seen],
    ])) as [string[], Record<string, string>];
    const processes = parseLive(live);
    const versions = Object.keys(seen ?? {})
      .filter((f) => f.startsWith('first:'))
      .map((f) => f.slice(6))
      .sort((a, b) => Number(seen[`last:${b}`] ?? 0) - Number(seen[`last:${a}`] ?? 0));
    const listed = versions.slice(0, MAX_LISTED_VERSIONS);
    const entries = (await sendCommands(
      this.redis,
      listed.map((v) => ['hvals', versionRunsKey(v)]),
    )) as string[][];
    const facts = listed.map((version, i): VersionFacts => {
      const runs: Partial<Record<RunStatus, number>> = {};
      let pendingApprovals = 0;
      let onQueue = 0;
      for (const entry of entries[i] ?? []) {
        const [status, pending, ...tenant] = entry.split('|') as [RunStatus, string, ...string[]];
        if (tenantId !== undefined && tenant.join('|') !== tenantId) continue;
        runs[status] = (runs[status] ?? 0) + 1;
        pendingApprovals += Number(pending) || 0;
        if (status !== 'pending_approval' || !Number(pending)) onQueue++;
      }
      const mine = processes.filter((p) => p.version === version);
      return {
        version,
        workers: mine.filter((p) => p.role === 'worker').length,
        apis: mine.filter((p) => p.role === 'api').length,
        runs,
        pendingApprovals,
        onQueue,
        firstSeen: Number(seen[`first:${version}`]),
        lastSeen: Math.max(Number(seen[`last:${version}`] ?? 0), ...mine.map(() => at)),
      };
    });
    const forgotten = (tenantId === undefined ? facts : [])
      .filter((f) => f.workers + f.apis === 0 && Object.keys(f.runs).length === 0 && f.lastSeen < at - FORGET_AFTER_MS)
      .map((f) => f.version);
    if (forgotten.length) await this.redis.hdel(VERSION_KEYS.seen, ...forgotten.flatMap((v) => [`first:${v}`, `last:${v}`, `worker:${v}`]));
    return facts.filter((f) => !forgotten.includes(f.version));
  }
}

function parseLive(members: string[] | null): LiveProcess[] {
  return (members ?? []).map((m) => {
    const [role, version, instance] = m.split('|') as [VersionRole, string, string];
    return { role, version, instance };
  });
}
