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
    /** Each firing continues this session of the caller's (queued behind a run still in it): a LangGraph thread cron. */
    sessionId: submitRunBodySchema.shape.sessionId,
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

/** Fire times one firing stands for when the fleet was down across them, counted up to this many. */
export const MISSED_COUNT_LIMIT = 10_000;

/**
 * The fire times an outage swallowed, told in one history entry: how many (`capped` when
 * counting stopped at MISSED_COUNT_LIMIT; `count` is then a lower bound), the first and the last.
 */
export const missedFiringsSchema = z.object({
  count: z.number().int().min(1),
  first: z.string(),
  last: z.string(),
  capped: z.literal(true).optional(),
});
export type MissedFirings = z.infer<typeof missedFiringsSchema>;

/**
 * What became of one firing: a run `started`; `skipped` (overlap), `missed` (outage, catchUp
 * none), `paused` (the owner's key is gone or lost a role), or `failed` to start (quota…;
 * `reason` says why). `missed` lists the fire times that ran no run, on a `missed` entry and
 * on a catch-up's `started` one.
 */
export const scheduleFiringSchema = z.object({
  scheduledFor: z.string(),
  at: z.string(),
  outcome: z.enum(['started', 'skipped', 'missed', 'paused', 'failed']),
  runId: z.string().optional(),
  reason: z.string().optional(),
  missed: missedFiringsSchema.optional(),
});
export type ScheduleFiring = z.infer<typeof scheduleFiringSchema>;

/**
 * Why a schedule stopped firing by itself: its owner's key no longer exists with the roles
 * the schedule runs with (`code` `owner_key_missing` or `owner_roles_changed`), or, for a
 * person who signs in through the company provider, their latest sign-in is too old
 * (`owner_signed_out`) or lacks a role. Enabling it again clears it.
 */
export const schedulePauseSchema = z.object({ at: z.string(), code: z.string(), reason: z.string() });
export type SchedulePause = z.infer<typeof schedulePauseSchema>;

/**
 * A schedule as stored: what its owner asked for, and who they are (each firing runs as
 * them). The owner is its creator, or whoever last edited it (see the service).
 */
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
  sessionId: z.string().optional(),
  paused: schedulePauseSchema.optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ScheduleRecord = z.infer<typeof scheduleRecordSchema>;

/** A schedule as callers see it (`userId`: its owner); `nextRunAt` is null while it is disabled. */
export const scheduleViewSchema = scheduleRecordSchema
  .omit({ schemaVersion: true, owner: true })
  .extend({ userId: z.string(), nextRunAt: z.string().nullable() });
export type ScheduleView = z.infer<typeof scheduleViewSchema>;

/** Fire times a schedule's read lists ahead. */
export const NEXT_FIRINGS = 5;

/**
 * `GET /v1/schedules/:id`: the schedule with its latest firings (newest first), the runs they
 * started, and its next fire times (NEXT_FIRINGS of them, UTC instants computed in its
 * `timezone`; none while it is disabled).
 */
export const scheduleDetailSchema = scheduleViewSchema.extend({
  history: z.array(scheduleFiringSchema),
  nextFirings: z.array(z.string()),
  runs: z.array(runViewSchema),
});
export type ScheduleDetail = z.infer<typeof scheduleDetailSchema>;

/** `GET /v1/schedules`: the caller's schedules (an admin's: the tenant's). */
export const scheduleListSchema = z.object({ schedules: z.array(scheduleViewSchema) });
export type ScheduleList = z.infer<typeof scheduleListSchema>;
