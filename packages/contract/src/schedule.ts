import { z } from 'zod';
import { submitRunBodySchema } from './api.js';
import { principalSchema } from './identity.js';
import { SCHEMA_VERSION } from './run.js';
import { runViewSchema } from './views.js';

/** A cron expression: 5 fields (minute first), or 6 with seconds first; checked for meaning by the server (400 with the reason). */
export const cronSchema = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .refine((s) => [5, 6].includes(s.split(/\s+/).length), 'a cron expression has 5 fields, or 6 with seconds first');

/** An IANA time zone (`Europe/Berlin`); checked by the server. */
export const timezoneSchema = z.string().min(1).max(64);

/** `overlap`: `skip` drops a firing while the schedule's previous run is still active (and records it); `allow` starts it anyway. */
export const scheduleOverlapSchema = z.enum(['skip', 'allow']);
/** `catchUp`: after an outage, `last` runs the latest missed firing once, `none` none. */
export const scheduleCatchUpSchema = z.enum(['none', 'last']);

/** `POST /v1/schedules`: each firing submits `{agent, input, metadata, limits}` as the schedule's creator. */
export const createScheduleBodySchema = z
  .object({
    agent: submitRunBodySchema.shape.agent,
    input: submitRunBodySchema.shape.input,
    cron: cronSchema,
    timezone: timezoneSchema.default('UTC'),
    overlap: scheduleOverlapSchema.default('skip'),
    catchUp: scheduleCatchUpSchema.default('none'),
    metadata: submitRunBodySchema.shape.metadata,
    limits: submitRunBodySchema.shape.limits,
    enabled: z.boolean().default(true),
  })
  .strict();
export type CreateScheduleBody = z.infer<typeof createScheduleBodySchema>;
export type CreateScheduleInput = z.input<typeof createScheduleBodySchema>;

/** `PATCH /v1/schedules/:id`: what may change; at least one field. */
export const patchScheduleBodySchema = z
  .object({
    enabled: z.boolean().optional(),
    cron: cronSchema.optional(),
    timezone: timezoneSchema.optional(),
    input: submitRunBodySchema.shape.input.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'name at least one of enabled, cron, timezone, input');
export type PatchScheduleBody = z.infer<typeof patchScheduleBodySchema>;

/** What became of one firing: a run `started`; `skipped` (overlap), `missed` (outage, catchUp none), `disabled`, or `failed` to start (quota…; `reason` says why). */
export const scheduleFiringSchema = z.object({
  scheduledFor: z.string(),
  at: z.string(),
  outcome: z.enum(['started', 'skipped', 'missed', 'failed']),
  runId: z.string().optional(),
  reason: z.string().optional(),
});
export type ScheduleFiring = z.infer<typeof scheduleFiringSchema>;

/** A schedule as stored: what the creator asked for, and who they are (each firing runs as them). */
export const scheduleRecordSchema = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  id: z.string(),
  owner: principalSchema,
  agent: z.string(),
  input: z.string(),
  cron: z.string(),
  timezone: z.string(),
  overlap: scheduleOverlapSchema,
  catchUp: scheduleCatchUpSchema,
  metadata: z.record(z.string(), z.unknown()),
  limits: submitRunBodySchema.shape.limits,
  enabled: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ScheduleRecord = z.infer<typeof scheduleRecordSchema>;

/** A schedule as callers see it; `nextRunAt` is null while it is disabled. */
export const scheduleViewSchema = scheduleRecordSchema
  .omit({ schemaVersion: true, owner: true })
  .extend({ userId: z.string(), nextRunAt: z.string().nullable() });
export type ScheduleView = z.infer<typeof scheduleViewSchema>;

/** `GET /v1/schedules/:id`: the schedule with its latest firings (newest first) and the runs they started. */
export const scheduleDetailSchema = scheduleViewSchema.extend({
  history: z.array(scheduleFiringSchema),
  runs: z.array(runViewSchema),
});
export type ScheduleDetail = z.infer<typeof scheduleDetailSchema>;

/** `GET /v1/schedules`: the caller's schedules (an admin's: the tenant's). */
export const scheduleListSchema = z.object({ schedules: z.array(scheduleViewSchema) });
export type ScheduleList = z.infer<typeof scheduleListSchema>;
