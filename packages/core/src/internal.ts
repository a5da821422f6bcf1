/**
 * `@rein/core/internal`: what Rein's own tests and benches reach for beyond the public
 * index and the role entries (`@rein/core/worker`, `@rein/core/http`, `@rein/core/cli`):
 * the runtime, the stores, keys, the archive. No service or CLI source imports it; the
 * tests of core itself import its sources directly.
 * INTERNAL: no stability promise; any name may change or go in any release. Each name is
 * one a test or bench imports (`test/infra/core-entries.test.ts`).
 */

export {
  createOpenAICompletion,
  type ModelDelta,
  type ModelGateway,
  type ModelReply,
  type ModelRequest,
} from './adapters/model/model-gateway.js';
export { createArchivePool } from './adapters/postgres/archive-pool.js';
export { migrateArchive } from './adapters/postgres/migrations.js';
export { HOUSEKEEPING_QUEUE, type JobPayloads, StepScheduler, stepQueue } from './adapters/queue/job-catalog.js';
export { RedisEffectLedger } from './adapters/redis/effect-ledger.js';
export { HotRuns } from './adapters/redis/hot-runs.js';
export { RedisIdempotencyKeys } from './adapters/redis/idempotency-keys.js';
export { createRedisClient, isCluster } from './adapters/redis/redis.js';
export { RunStore } from './adapters/redis/run-store.js';
export { ScheduleStore } from './adapters/redis/schedule-store.js';
export { RedisSessions } from './adapters/redis/session-store.js';
export { SignInStore } from './adapters/redis/sign-in-store.js';
export { createResilientModelGateway } from './adapters/resilience/resilient-model.js';
export { createRunArchiving } from './features/archive/run-archiving.js';
export { compensationKey } from './features/compensation/compensation.js';
export { reap } from './features/housekeeping/reaper.js';
export { stricterOf } from './policy/approvals/approval-binding.js';
export { verifyReceipt } from './policy/audit/receipts.js';
export type { EffectLedger } from './policy/ports/effect-ledger.js';
export type { IdempotencyKeys } from './policy/ports/idempotency-keys.js';
export type { JobQueue } from './policy/ports/job-queue.js';
export type { RunRepository } from './policy/ports/run-repository.js';
export type { SessionRegistry } from './policy/ports/session-registry.js';
export type { TurnJournal } from './policy/ports/turn-journal.js';
export { scheduledRunId } from './policy/run/schedule-cron.js';
export { createRegistry } from './process/registry.js';
export { createRuntime, type Runtime, type WorkerRuntime } from './process/runtime.js';
export { loadConfig } from './shared/config.js';
export { ModelRejectedError, ModelReplyInvalidError, NotFoundError, StaleStepError } from './shared/errors.js';
export { createInputFilter } from './shared/guards/input-filter.js';
export { createPiiMasker } from './shared/guards/pii-masker.js';
export { ARCHIVE_BACKLOG_KEY, FAULTS_KEY, queuePrefix, runKeys, tenantKeys } from './shared/keys.js';
export { createLogger } from './shared/logger.js';
