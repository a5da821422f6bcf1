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

/**
 * What one app version serves, as its processes register it (`rein:{versions}:manifest:<v>`):
 * each tool's digest (what an approval was asked under), each agent's digest and tools, the
 * MCP servers it declares. What `GET /v1/versions/:v/impact` compares.
 */
export const versionManifestSchema = z.object({
  version: appVersionSchema,
  registeredAt: z.string(),
  tools: z.record(
    z.string(),
    z.object({
      digest: z.string(),
      kind: z.string(),
      roles: z.array(z.string()).nullable(),
      /** Each part of the digest hashed apart (absent in manifests registered before it was kept). */
      parts: z.object({ schema: z.string(), roles: z.string(), policy: z.string() }).optional(),
    }),
  ),
  agents: z.record(z.string(), z.object({ digest: z.string(), tools: z.array(z.string()) })),
  mcpServers: z.array(z.string()),
});
export type VersionManifest = z.infer<typeof versionManifestSchema>;

/** `GET /v1/versions/:version/impact?against=`: the version to compare with (default: the current one). */
export const versionImpactQuerySchema = z.object({ against: appVersionSchema.optional() }).strict();

const changedNames = z.object({ added: z.array(z.string()), removed: z.array(z.string()), changed: z.array(z.string()) });

/**
 * What promoting `version` and upgrading `against`'s runs to it would change, changing
 * nothing: the definitions that differ, then the work in flight they touch. Counts cover
 * the whole fleet; the items listed are the caller's tenant's (at most 200 of each).
 */
export const versionImpactSchema = z.object({
  version: appVersionSchema,
  against: appVersionSchema,
  /** The agents `version` serves (what a deploy check replays). */
  agentsServed: z.array(z.string()),
  tools: changedNames,
  agents: changedNames,
  mcpServers: z.object({ added: z.array(z.string()), removed: z.array(z.string()) }),
  /** Pending or approved approvals an upgrade would withdraw: their tool changed or is gone. */
  withdrawn: z.object({
    count: z.number().int().min(0),
    items: z.array(
      z.object({
        runId: z.string(),
        approvalId: z.string(),
        tool: z.string(),
        status: z.string(),
        why: z.enum(['tool_changed', 'tool_removed']),
        /** What differs: `removed`, or the parts of the tool that changed (`kind`, `schema`, `roles`, `policy`), or `asked_under_another_definition`. */
        difference: z.array(z.enum(['removed', 'kind', 'schema', 'roles', 'policy', 'asked_under_another_definition'])),
      }),
    ),
  }),
  /** Unfinished runs of `against` whose agent changed or is gone in `version`. */
  runs: z.object({
    count: z.number().int().min(0),
    items: z.array(z.object({ runId: z.string(), agent: z.string(), status: z.string(), why: z.enum(['agent_changed', 'agent_removed']) })),
  }),
  /** Schedules whose agent changed or is gone in `version`. */
  schedules: z.object({
    count: z.number().int().min(0),
    items: z.array(z.object({ scheduleId: z.string(), agent: z.string(), why: z.enum(['agent_changed', 'agent_removed']) })),
  }),
});
export type VersionImpact = z.infer<typeof versionImpactSchema>;
