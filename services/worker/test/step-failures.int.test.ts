import { type ModelGateway, ModelRejectedError, ModelReplyInvalidError } from '@rein/core/internal';
import { describe, expect, it } from 'vitest';
import { workerPerTest } from './worker-harness.js';

const start = workerPerTest();

/** A model that fails every call with `make()`, counting the calls. */
const failing = (make: () => Error): ModelGateway & { calls: number } => {
  const model = {
    calls: 0,
    async complete(): Promise<never> {
      model.calls++;
      throw make();
    },
  };
  return model;
};

describe('a step that fails for good ends its run with a reason taken from the error type', () => {
  it('ends the run model_unavailable at once when the model rejects the request (not retryable)', async () => {
    const model = failing(() => new ModelRejectedError('model m rejected the request (400): bad tool schema'));
    const f = await start({ model });
    const run = await f.finished(await f.submit('hello'));
    expect(run).toMatchObject({ status: 'failed', reason: 'model_unavailable' });
    expect(model.calls).toBe(1); // not retried
  });

  it('ends the run model_reply_invalid once a retryable invalid reply has used up the attempts', async () => {
    const model = failing(() => new ModelReplyInvalidError('no choices in the reply'));
    const f = await start({ model });
    const run = await f.finished(await f.submit('hello'));
    expect(run).toMatchObject({ status: 'failed', reason: 'model_reply_invalid' });
    expect(model.calls).toBe(2); // REIN_STEP_ATTEMPTS=2 in the harness
  });

  it('never reads a reason out of an error message: an untyped error is internal_error whatever it says', async () => {
    const f = await start({ model: failing(() => new Error('model_unavailable: not really')) });
    const run = await f.finished(await f.submit('hello'));
    expect(run).toMatchObject({ status: 'failed', reason: 'internal_error' });
  });
});

describe('a job the table cannot take', () => {
  it('fails at once, not retried, naming what is wrong: an unknown name or a malformed payload', async () => {
    const f = await start({ model: failing(() => new Error('no model call expected')) });
    const queue = f.rt.scheduler.queues[0];
    if (!queue) throw new Error('no step queue');
    await queue.add('mystery', {}, { jobId: 'unknown', attempts: 2 });
    await queue.add('step', { runId: 'r1', step: 'one' }, { jobId: 'malformed', attempts: 2 });
    for (const [id, reason] of [
      ['unknown', /^invalid_job: unknown job name "mystery"$/],
      ['malformed', /^invalid_job: malformed "step" job: .*step/s],
    ] as const) {
      const until = Date.now() + 10_000;
      while (Date.now() < until && !(await queue.getJob(id))?.failedReason) await new Promise((r) => setTimeout(r, 50));
      const job = await queue.getJob(id);
      expect(job?.failedReason, id).toMatch(reason);
      expect(job?.attemptsMade, id).toBe(1);
    }
  });
});
