import { describe, expect, it, vi } from 'vitest';
import {
  admitJobSchema,
  archiveJobSchema,
  compensateJobSchema,
  expireJobSchema,
  housekeepingJobSchema,
  repairJobSchema,
  slotJobSchema,
  stepJobSchema,
  wakeJobSchema,
} from '../src/adapters/queue/job-catalog.js';
import { failJob, InvalidJobError, type JobTable, runJob } from '../src/adapters/queue/job-table.js';
import { fireJobSchema } from '../src/adapters/queue/schedule-queue.js';

/** A table whose handlers say which ran and with what. */
function table() {
  const ran = vi.fn(async (name: string, payload: unknown) => `${name} ${JSON.stringify(payload)}`);
  const ended = vi.fn(async (_payload: unknown, _err: Error) => {});
  const jobs: JobTable<string> = {
    step: { schema: stepJobSchema, run: (p) => ran('step', p), onFinalFailure: ended },
    resume: { schema: stepJobSchema, run: (p) => ran('resume', p), onFinalFailure: ended },
    repair: { schema: repairJobSchema, run: (p) => ran('repair', p), onFinalFailure: ended },
    wake: { schema: wakeJobSchema, run: (p) => ran('wake', p), onFinalFailure: ended },
    expire: { schema: expireJobSchema, run: (p) => ran('expire', p) },
    escalate: { schema: expireJobSchema, run: (p) => ran('escalate', p) },
    compensate: { schema: compensateJobSchema, run: (p) => ran('compensate', p) },
    archive: { schema: archiveJobSchema, run: (p) => ran('archive', p) },
    admit: { schema: admitJobSchema, run: (p) => ran('admit', p) },
    slot: { schema: slotJobSchema, run: (p) => ran('slot', p) },
    fire: { schema: fireJobSchema, run: (p) => ran('fire', p) },
    sweep: { schema: housekeepingJobSchema, run: (p) => ran('sweep', p) },
    reap: { schema: housekeepingJobSchema, run: (p) => ran('reap', p) },
    'checkpoint-audit': { schema: housekeepingJobSchema, run: (p) => ran('checkpoint-audit', p) },
  };
  return { jobs, ran, ended };
}

describe('the job table', () => {
  it('runs a job by its name with its parsed payload', async () => {
    const { jobs, ran } = table();
    expect(await runJob(jobs, 'expire', { runId: 'r1', step: 2, at: 5, extra: 'dropped' }, 'job')).toBe(
      'expire {"runId":"r1","step":2,"at":5}',
    );
    expect(await runJob(jobs, 'reap', {}, 'job')).toBe('reap null');
    expect(ran).toHaveBeenCalledTimes(2);
  });

  it('refuses an unknown job name with a typed error naming it', async () => {
    const { jobs, ran } = table();
    const err = await runJob(jobs, 'toString', {}, 'job').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidJobError);
    expect(err).toMatchObject({ code: 'invalid_job', retryable: false, message: 'unknown job name "toString"' });
    expect(ran).not.toHaveBeenCalled();
  });

  it('refuses a malformed payload, naming the job and the field', async () => {
    const { jobs, ran } = table();
    const err = await runJob(jobs, 'repair', { runId: 'r1', step: 1 }, 'job').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidJobError);
    expect((err as Error).message).toMatch(/^malformed "repair" job: .*version/s);
    expect(ran).not.toHaveBeenCalled();
  });

  it("does what a job's final failure does, and nothing for a kind that has no such action", async () => {
    const { jobs, ended } = table();
    const boom = new Error('boom');
    await failJob(jobs, 'resume', { runId: 'r1', step: 3 }, boom);
    expect(ended).toHaveBeenCalledWith({ runId: 'r1', step: 3 }, boom);
    await failJob(jobs, 'expire', { runId: 'r1', step: 3, at: 1 }, boom);
    expect(ended).toHaveBeenCalledTimes(1);
    await expect(failJob(jobs, 'step', { step: 3 }, boom)).rejects.toBeInstanceOf(InvalidJobError);
  });

  it('is checked by the type system: every job name needs an entry, with its own payload', () => {
    const { jobs } = table();
    // @ts-expect-error -- the reaper's entry is missing
    const missing: JobTable<string> = { ...jobs, reap: undefined };
    // @ts-expect-error -- an expire handler must parse an expire payload, not a step one
    const wrong: JobTable<string> = { ...jobs, expire: { schema: stepJobSchema, run: async () => '' } };
    expect([missing, wrong]).toHaveLength(2);
  });
});
