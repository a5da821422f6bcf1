import {
  bullConnection,
  createStepProcessor,
  createToolExecutor,
  DEADLINE_SWEEP,
  type ModelGateway,
  parseJob,
  QUEUE_PREFIX,
  ReinError,
  type Runtime,
  STEP_QUEUE,
  type StepJob,
  sweepDeadlines,
} from '@rein/core';
import { type Job, UnrecoverableError, Worker } from 'bullmq';

/** Which terminal reason a step that can no longer progress gets. */
function reasonFor(err: Error) {
  // UnrecoverableError carries the ReinError's code as the prefix of its message.
  const code = err instanceof ReinError ? err.code : /^(\w+): /.exec(err.message)?.[1];
  if (code === 'model_unavailable' || code === 'model_rejected') return 'model_unavailable' as const;
  if (code === 'model_reply_invalid') return 'model_reply_invalid' as const;
  return 'internal_error' as const;
}

/**
 * The BullMQ worker: one job = one ReAct step. Retryable failures go back to BullMQ
 * (backoff with jitter); a non-retryable error, or the last attempt, ends the run with
 * a reason instead of leaving it hanging.
 */
export function createStepWorker(rt: Runtime, model: ModelGateway): Worker {
  const { config, logger } = rt;
  const executeTool = createToolExecutor({
    tools: rt.tools,
    ledger: rt.ledger,
    metrics: rt.metrics,
    logger,
    toolTimeoutMs: config.REIN_TOOL_TIMEOUT_MS,
    approvalTtlMs: config.APPROVAL_TTL_MS,
  });
  const steps = createStepProcessor({
    store: rt.store,
    feed: rt.feed,
    journal: rt.journal,
    model,
    modelName: config.REIN_MODEL,
    tools: rt.tools,
    agents: rt.agents,
    executeTool,
    enqueue: rt.enqueue,
    quotas: rt.quotas,
    prices: config.REIN_MODEL_PRICES,
    inputFilter: rt.inputFilter,
    masker: rt.masker,
    guards: {
      repeatLimit: config.REIN_REPEAT_LIMIT,
      toolFailureLimit: config.REIN_TOOL_FAILURE_LIMIT,
      toolResultMaxChars: config.REIN_TOOL_RESULT_MAX_CHARS,
    },
    metrics: rt.metrics,
    logger,
    toolConcurrency: config.REIN_TOOL_CONCURRENCY,
    modelTimeoutMs: config.REIN_MODEL_TIMEOUT_MS,
  });

  const worker = new Worker(
    STEP_QUEUE,
    async (job: Job) => {
      const parsed = parseJob(job.name, job.data);
      if (parsed.name === 'expire') return `expired ${await rt.approvals.expireDue(parsed.payload.runId, parsed.payload.step)}`;
      if (parsed.name === DEADLINE_SWEEP.name) return `failed ${await sweepDeadlines({ store: rt.store, steps })}`;
      const { payload } = parsed;
      const started = performance.now();
      try {
        const outcome = await steps.process(payload);
        rt.metrics.stepDuration.observe({ outcome }, (performance.now() - started) / 1000);
        return outcome;
      } catch (err) {
        if (err instanceof ReinError && !err.retryable) throw new UnrecoverableError(`${err.code}: ${err.message}`);
        logger.warn(
          { runId: payload.runId, step: payload.step, attempt: job.attemptsMade + 1, err: (err as Error).message },
          'step failed; will retry',
        );
        throw err;
      }
    },
    {
      connection: bullConnection(config.REDIS_URL, 'worker', logger),
      prefix: QUEUE_PREFIX,
      concurrency: config.WORKER_CONCURRENCY,
      lockDuration: config.REIN_JOB_LOCK_MS,
      stalledInterval: Math.max(1000, Math.floor(config.REIN_JOB_LOCK_MS / 2)),
      // A step killed with its worker is picked up again; a step that kills every worker is not.
      maxStalledCount: 3,
    },
  );
  rt.scheduler
    .scheduleDeadlineSweep(config.REIN_SWEEP_INTERVAL_MS)
    .catch((err: Error) => logger.error({ err: err.message }, 'could not schedule the deadline sweeper'));
  worker.on('error', (err) => logger.warn({ err: err.message }, 'worker error'));
  worker.on('failed', (job, err) => {
    if (!job) return;
    const final = err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/.test(err.message);
    if (!final) return;
    const { runId, step } = job.data as StepJob;
    steps
      .fail(runId, reasonFor(err), err.message, (run) => run.step === step)
      .catch((e: Error) => logger.error({ err: e.message }, 'could not end the run'));
  });
  return worker;
}
