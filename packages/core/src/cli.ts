/**
 * `@rein/core/cli`: what the `rein` CLI (`packages/cli`) needs beyond the public index —
 * loading an app and its options, the archive's migrations, the audit log's verification.
 * INTERNAL: no stability promise; any name may change or go in any release. Each name is
 * one the CLI imports (`test/infra/core-entries.test.ts`).
 */

export { createArchivePool } from './adapters/postgres/archive-pool.js';
export { loadMigrations, migrateArchive } from './adapters/postgres/migrations.js';
export { GENESIS_HASH, truncation, verifyAuditChain } from './policy/audit/audit-chain.js';
export { verifyCheckpoint, verifyLogAgainstCheckpoint, verifyReceipt } from './policy/audit/receipts.js';
export { loadAppOrExit } from './process/load-app.js';
export { loadOptionsOrExit } from './shared/options.js';
