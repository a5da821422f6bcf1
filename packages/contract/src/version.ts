import { z } from 'zod';
import { appVersionSchema } from './app-version.js';
import { runStatusSchema } from './run.js';

/** One version as `GET /v1/versions` shows it. */
export const versionViewSchema = z.object({
  version: appVersionSchema,
  /** New runs are pinned to it (promoted, or the newest version an API process runs). */
  current: z.boolean(),
  /** An operator promoted it (`POST /v1/versions/:version/promote`). */
  promoted: z.boolean(),
  /** Workers of this version alive now (each refreshes a heartbeat). */
  workers: z.number().int().min(0),
  /** API processes of this version alive now. */
  apis: z.number().int().min(0),
  /** Its runs that are not finished, by status (a tenant admin: its own tenant's only). */
  runs: z.partialRecord(runStatusSchema, z.number().int().min(0)),
  /** Approvals pending on its parked runs (a tenant admin: its own tenant's only). */
  pendingApprovals: z.number().int().min(0),
  /**
   * Jobs on its queues, waiting for its workers or running (steps, resumes, wake-ups,
   * undos, archive jobs): with no worker alive, they wait until one starts or an upgrade
   * moves them. Operators only (the queues hold every tenant's jobs).
   */
  jobs: z.number().int().min(0).optional(),
  /** Where `POST /v1/versions/:version/upgrade` moves its runs, if asked. */
  upgradingTo: appVersionSchema.optional(),
  firstSeen: z.string(),
  lastSeen: z.string(),
});
export type VersionView = z.infer<typeof versionViewSchema>;

export const versionListSchema = z.object({ current: appVersionSchema, versions: z.array(versionViewSchema) });
export type VersionList = z.infer<typeof versionListSchema>;

/** `POST /v1/versions/:version/promote`: `force` promotes a version no worker runs (its new runs wait for one). */
export const promoteBodySchema = z.object({ force: z.boolean().optional() }).strict();
export type PromoteBody = z.infer<typeof promoteBodySchema>;

/** `POST /v1/versions/:version/upgrade`: its runs move to `to` (default: the current version) at their next step, its waiting jobs at once. */
export const upgradeBodySchema = z.object({ to: appVersionSchema.optional() }).strict();
export type UpgradeBody = z.infer<typeof upgradeBodySchema>;

/** `runs`: unfinished runs moved; `jobs`: jobs that were waiting on `from`'s queues, now on `to`'s. */
export const upgradeAnswerSchema = z.object({
  from: appVersionSchema,
  to: appVersionSchema,
  runs: z.number().int().min(0),
  jobs: z.number().int().min(0),
});
export type UpgradeAnswer = z.infer<typeof upgradeAnswerSchema>;
