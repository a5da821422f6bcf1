import { type JobPayloads, type JobQueue, StepScheduler } from '@rein/core/internal';
import { MemoryJobQueue } from '@rein/core/testing';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, type BackendKind, useBackend } from './backends.js';
import { T0, TTL_SECONDS } from './fixtures.js';

/** The JobQueue port's behaviours on BullMQ over one Redis and a 3-master cluster, and on the in-memory fake. */
describe.each<BackendKind>(BACKENDS)('the job queue on %s', (kind) => {
  const backend = useBackend(kind, TTL_SECONDS);
  let scheduler: StepScheduler | undefined;
  let jobs: JobQueue<JobPayloads>;
  const route = { own: 'v1', route: (r: { appVersion?: string }) => r.appVersion ?? 'v1' };
  beforeEach(async () => {
    await scheduler?.close();
    const redis = backend().redis;
    scheduler = redis ? new StepScheduler(redis, 3, 1, route) : undefined;
    jobs = scheduler ?? new MemoryJobQueue(route.own, route.route);
  });
  // Registered after the backend's: runs before it stops Redis.
  afterAll(async () => scheduler?.close());

  it('holds a job once however often it is enqueued: its id comes from its payload', async () => {
    await jobs.enqueue('step', { runId: 'r1', step: 0 });
    await jobs.enqueue('step', { runId: 'r1', step: 0 });
    await jobs.enqueue('resume', { runId: 'r1', step: 0 });
    expect(await jobs.jobCounts('v1')).toBe(2);
  });

  it("puts a run's job on its route's version, and moves a version's waiting jobs to another", async () => {
    await jobs.enqueue('step', { runId: 'r1', step: 0 }, { route: { appVersion: 'v2' } });
    await jobs.enqueue('step', { runId: 'r2', step: 3 }, { route: { appVersion: 'v2' }, delayMs: 60_000 });
    await jobs.enqueue('step', { runId: 'r3', step: 0 });
    expect(await jobs.jobCounts('v2')).toBe(2);
    expect(await jobs.moveJobs('v2', 'v1')).toBe(2);
    expect(await jobs.jobCounts('v2')).toBe(0);
    expect(await jobs.jobCounts('v1')).toBe(3);
  });

  /** The expiry timers waiting, by job id: the port does not list them, each backend shows its own. */
  async function timers(): Promise<string[]> {
    if (jobs instanceof MemoryJobQueue) return jobs.jobs().flatMap((j) => (j.name === 'expire' ? [j.id] : []));
    const delayed = await Promise.all((scheduler?.housekeepingQueues ?? []).map((q) => q.getJobs(['delayed'])));
    return delayed.flat().flatMap((j) => (j?.id ? [j.id] : []));
  }

  it("keeps expiry timers out of every version's queue, and cancels one, leaving the others (a missing one is no error)", async () => {
    const timer = { runId: 'r1', step: 2, at: T0 };
    await jobs.enqueue('expire', timer, { delayMs: 60_000 });
    await jobs.enqueue('expire', { ...timer, at: T0 + 1 }, { delayMs: 60_000 });
    expect(await jobs.jobCounts('v1')).toBe(0);
    expect((await timers()).sort()).toEqual([`r1-2-expire-${T0}`, `r1-2-expire-${T0 + 1}`]);
    await jobs.cancelExpiry(timer);
    await jobs.cancelExpiry({ ...timer, at: T0 + 2 });
    expect(await timers()).toEqual([`r1-2-expire-${T0 + 1}`]);
  });
});
