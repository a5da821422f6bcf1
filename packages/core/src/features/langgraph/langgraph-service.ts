import { lgAssistants } from './lg-assistants.js';
import type { LangGraphServiceDeps } from './lg-common.js';
import { lgCrons } from './lg-crons.js';
import { lgRuns } from './lg-runs.js';
import { createThreadReader } from './lg-thread-reader.js';
import { lgThreads } from './lg-threads.js';

export { type FollowEvents, type LangGraphServiceDeps, NotServedError } from './lg-common.js';

/**
 * The LangGraph API over Rein: assistants are agents, threads are a user's sessions,
 * runs are runs, interrupts are pending approvals and a resume command decides them
 * through the approval service, crons are schedules. Every call goes through the run,
 * approval and schedule services with the caller's principal, so keys, tenants, quotas,
 * budgets, approval rights, masking and audit are the ones `POST /v1/runs` meets. The
 * door's parts live beside it: assistants, threads (and the reader they share with runs
 * and crons), runs (and how they start), crons.
 */
export function createLangGraphService(deps: LangGraphServiceDeps) {
  const reader = createThreadReader(deps);
  return {
    assistants: lgAssistants(deps),
    threads: lgThreads(deps, reader),
    runs: lgRuns(deps, reader),
    crons: lgCrons(deps, reader.thread),
  };
}

export type LangGraphService = ReturnType<typeof createLangGraphService>;
