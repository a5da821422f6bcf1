import { NotFoundError, QuotaExceededError, type ReinError, StaleStepError } from '../../shared/errors.js';
import { AdmitResult, CommitResult } from './lua-scripts.js';

/**
 * A script's return codes that refuse its write, each with the typed error it stands for
 * (as BullMQ's `finishedErrors`): the one place a Lua script's code becomes an error.
 * Codes that are answers, not refusals (a session held, a cohort slot taken), stay with
 * their callers as values.
 */
function refusals<Code extends number, Context>(errors: Partial<Record<Code, (context: Context) => ReinError>>) {
  /** Throws the error `code` stands for, if it is a refusal. */
  return (code: Code, context: Context): void => {
    const refused = errors[code];
    if (refused) throw refused(context);
  };
}

export const refuseOn = {
  commitRun: refusals<CommitResult, { runId: string; fromVersion: number }>({
    [CommitResult.NoSuchRun]: ({ runId }) => new NotFoundError(`run ${runId}`),
    [CommitResult.Stale]: ({ runId, fromVersion }) => new StaleStepError(`run ${runId} moved past version ${fromVersion}`),
  }),
  admitRun: refusals<
    AdmitResult,
    { tenantId: string; maxConcurrentRuns: number; maxParkedRuns: number; tokensPerDay: number; costPerDayUsd: number }
  >({
    [AdmitResult.TooManyRuns]: (q) =>
      new QuotaExceededError(
        'quota_concurrent_runs',
        `tenant ${q.tenantId} already has ${q.maxConcurrentRuns} runs in progress; wait for one to finish`,
      ),
    [AdmitResult.TooManyParked]: (q) =>
      new QuotaExceededError(
        'quota_parked_runs',
        `tenant ${q.tenantId} already has ${q.maxParkedRuns} runs waiting for an approval; decide some first`,
      ),
    [AdmitResult.TokensUsedUp]: (q) =>
      new QuotaExceededError('quota_tokens', `tenant ${q.tenantId} used its ${q.tokensPerDay} tokens for today (UTC)`),
    [AdmitResult.CostUsedUp]: (q) =>
      new QuotaExceededError('quota_cost', `tenant ${q.tenantId} spent its ${q.costPerDayUsd} USD for today (UTC)`),
  }),
};
