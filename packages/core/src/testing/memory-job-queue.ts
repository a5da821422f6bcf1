import { type JobName, type JobPayloads, jobCatalog } from '../adapters/queue/job-catalog.js';
import type { EnqueueOptions, ExpiryTimer, JobQueue, JobRoute } from '../policy/ports/job-queue.js';

/** A job as the in-memory queue holds it: `version`, the workers it waits for (none for an expiry timer). */
export interface QueuedJob {
  name: JobName;
  id: string;
  payload: unknown;
  version: string | null;
  delayMs: number;
}

/**
 * The job queue in memory, as StepScheduler: payloads checked against the catalog, one job
 * per id while it waits (enqueued again once taken), a run's job on its route's version,
 * expiry timers apart from every version's queue. A test takes the jobs it runs.
 */
export class MemoryJobQueue implements JobQueue<JobPayloads> {
  private readonly waiting: QueuedJob[] = [];

  /** `route`: the version a route names (StepScheduler's router); by default its own version, else `own` (this process's). */
  constructor(
    own = 'v1',
    private readonly route: (route: JobRoute) => string = (r) => r.appVersion ?? own,
  ) {}

  async enqueue<N extends JobName>(name: N, job: JobPayloads[N], opts?: EnqueueOptions): Promise<void> {
    // The catalog entry matches `name`; TypeScript cannot correlate the union, hence the widening.
    const entry = jobCatalog[name] as unknown as { schema: { parse(j: unknown): JobPayloads[N] }; id: (j: JobPayloads[N]) => string };
    const payload = entry.schema.parse(job);
    const id = entry.id(payload);
    const version = name === 'expire' ? null : this.route(opts?.route ?? {});
    if (this.waiting.some((j) => j.id === id && j.version === version)) return;
    this.waiting.push({ name, id, payload, version, delayMs: Math.max(0, Math.ceil(opts?.delayMs ?? 0)) });
  }

  async cancelExpiry(job: ExpiryTimer): Promise<void> {
    const id = jobCatalog.expire.id(job);
    const at = this.waiting.findIndex((j) => j.version === null && j.id === id);
    if (at >= 0) this.waiting.splice(at, 1);
  }

  async jobCounts(version: string): Promise<number> {
    return this.waiting.filter((j) => j.version === version).length;
  }

  async moveJobs(from: string, to: string): Promise<number> {
    const moving = this.waiting.filter((j) => j.version === from);
    for (const j of moving) j.version = to;
    return moving.length;
  }

  /** The jobs waiting, in the order they were enqueued (expiry timers included). */
  jobs(): readonly QueuedJob[] {
    return [...this.waiting];
  }

  /** Takes the first waiting job of `name` (any, without one), as a worker would. */
  take(name?: JobName): QueuedJob | undefined {
    const at = this.waiting.findIndex((j) => !name || j.name === name);
    return at >= 0 ? this.waiting.splice(at, 1)[0] : undefined;
  }
}
