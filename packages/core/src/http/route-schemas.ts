import {
  addressableIdSchema,
  approvalContextViewSchema,
  approvalFeedEventSchema,
  approvalLinksSchema,
  approvalListSchema,
  approvalLoadQuerySchema,
  approvalLoadSchema,
  approvalPreviewSchema,
  approvalViewSchema,
  approveBodySchema,
  appVersionSchema,
  auditKeysSchema,
  auditPageSchema,
  auditQuerySchema,
  auditReceiptSchema,
  batchDecideBodySchema,
  batchDecisionSchema,
  compensationViewSchema,
  createdWebhookSchema,
  createLinksBodySchema,
  createReplayCohortBodySchema,
  createScheduleBodySchema,
  createWebhookBodySchema,
  deliveryLogSchema,
  errorEnvelopeSchema,
  forkRunBodySchema,
  idempotencyKeySchema,
  listApprovalsQuerySchema,
  listRunsQuerySchema,
  meSchema,
  patchScheduleBodySchema,
  previewBodySchema,
  promoteBodySchema,
  rejectBodySchema,
  replayCohortViewSchema,
  replayRunBodySchema,
  replayStartedSchema,
  runDiffSchema,
  runEventSchema,
  runListSchema,
  runTraceSchema,
  runViewSchema,
  scheduleDetailSchema,
  scheduleListSchema,
  scheduleViewSchema,
  sessionViewSchema,
  snapshotListSchema,
  submitRunBodySchema,
  uncertainEffectListSchema,
  upgradeAnswerSchema,
  upgradeBodySchema,
  usageQuerySchema,
  usageResponseSchema,
  versionImpactQuerySchema,
  versionImpactSchema,
  versionListSchema,
  webhookListSchema,
} from '@rein/contract';
import { type ZodType, z } from 'zod';
import { chatParamsSchema, chatRequestSchema, chatStreamParamsSchema, runAgentInputSchema } from '../policy/frontends/protocol-bodies.js';

/**
 * The schema of every `/v1` route, for its OpenAPI entry: the same zod schemas the
 * handlers validate with (`parseInput`) and the services' answers are typed by.
 */

export const idParamsSchema = z.object({ id: addressableIdSchema });
/** `/v1/versions/:version/…`: a well-formed version (the service then 404s one no process ever ran). */
export const versionParamsSchema = z.object({ version: appVersionSchema });

/** Error answers by status, each with the codes a client can match on. */
const ERROR_CODES = {
  400: 'invalid_request (the message names the fields), invalid_json, bad_url',
  401: 'unauthorized: missing or unknown API key',
  403: 'forbidden: the role or ownership does not allow it',
  404: 'not_found (also for another tenant’s resources)',
  409: 'a conflict with the current state',
  410: 'gone',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'idempotency_key_reused: the same key was sent with another body',
  429: 'too many',
  503: 'unavailable: try again later',
} as const;

/** The error answers of a route: 400, 401 and 503 on every one, plus `extra` (status → codes). */
function errors(extra: Record<number, string> = {}): Record<number, ZodType> {
  const all = { 400: ERROR_CODES[400], 401: ERROR_CODES[401], 503: ERROR_CODES[503], ...extra };
  return Object.fromEntries(Object.entries(all).map(([status, codes]) => [status, errorEnvelopeSchema.describe(codes ?? '')]));
}

const sse = (event: ZodType, what: string) => ({
  description: `${what}: server-sent events, each \`id\` a stream position; reconnect with Last-Event-ID to resume without loss or repeats`,
  content: { 'text/event-stream': { schema: event } },
});

/** Last-Event-ID, as a header or (for EventSource, which cannot set one) as `lastEventId`. */
const resumeHeaders = z.object({
  'last-event-id': z
    .string()
    .regex(/^\d+-\d+$/)
    .optional(),
});
const resumeQuery = z.object({
  lastEventId: z
    .string()
    .regex(/^\d+-\d+$/)
    .optional(),
});

/** A decision's answer: the same, with its signed receipt when the fleet has an audit key (REIN_AUDIT_SIGNING_KEY). */
const receiptedSchema = <T extends z.ZodObject>(answer: T) =>
  answer.extend({ receipt: auditReceiptSchema.optional().describe('the decision’s signed log entry (`rein audit verify --receipt`)') });

const route = <S extends Record<string, unknown>>(tag: string, operationId: string, summary: string, schema: S) => ({
  tags: [tag],
  operationId,
  summary,
  ...schema,
});

/** A protocol door's stream: its own events, documented by the protocol, not by Rein. */
const protocolStream = (what: string) => ({
  description: `${what} (server-sent events; see docs/frontends.md)`,
  content: { 'text/event-stream': { schema: z.object({ type: z.string() }).loose() } },
});
const doorErrors = errors({
  400: `${ERROR_CODES[400]}, unknown_agent, chat_message_required, chat_regenerate_unsupported, ag_ui_message_required, invalid_arguments`,
  404: `${ERROR_CODES[404]} (an approval of another tenant, user, session or agent)`,
  409: 'session_busy (a run of the session is still active), idempotency_key_in_flight',
  413: ERROR_CODES[413],
  415: ERROR_CODES[415],
  422: ERROR_CODES[422],
  429: 'quota_concurrent_runs, quota_parked_runs, quota_tokens, quota_cost, too_many_streams',
});

export const apiRoutes = {
  chat: route('frontends', 'chat', 'The AI SDK UI message stream (useChat, AI SDK 6): send a message or answer approvals', {
    params: chatParamsSchema,
    body: chatRequestSchema,
    response: { 200: protocolStream('UI message stream chunks'), ...doorErrors },
  }),
  chatStream: route('frontends', 'chatStream', 'Reconnect to a chat: its live run replayed from the start; 204 when none is live', {
    params: chatStreamParamsSchema,
    response: {
      200: protocolStream('UI message stream chunks'),
      204: z.null().describe('no live run in this chat'),
      ...errors({ 429: 'too_many_streams' }),
    },
  }),
  agUi: route('frontends', 'agUiRun', 'AG-UI 1.0: run the agent (RunAgentInput), or resume its interrupts', {
    params: chatParamsSchema,
    body: runAgentInputSchema,
    response: { 200: protocolStream('AG-UI events'), ...doorErrors },
  }),
  me: route('identity', 'getMe', 'The caller as its API key identifies it', { response: { 200: meSchema, ...errors() } }),
  createRun: route('runs', 'createRun', 'Submit a run', {
    body: submitRunBodySchema,
    headers: z.object({ 'idempotency-key': idempotencyKeySchema.optional(), traceparent: z.string().optional() }),
    response: {
      202: runViewSchema.describe('the run, queued'),
      200: runViewSchema.describe('the run an earlier request with the same Idempotency-Key created'),
      ...errors({
        400: `${ERROR_CODES[400]}, unknown_agent, limit_above_ceiling`,
        409: 'session_busy (a run of the session is still active), idempotency_key_in_flight',
        413: ERROR_CODES[413],
        415: ERROR_CODES[415],
        422: ERROR_CODES[422],
        429: 'quota_concurrent_runs, quota_parked_runs, quota_tokens, quota_cost',
      }),
    },
  }),
  listRuns: route(
    'runs',
    'listRuns',
    'Runs of the caller’s tenant, newest first (their own unless approver or above); q, from, to search the archive',
    {
      querystring: listRunsQuerySchema,
      response: { 200: runListSchema, ...errors({ 403: ERROR_CODES[403], 409: 'archive_unavailable (no archive to search)' }) },
    },
  ),
  getUsage: route('runs', 'getUsage', 'Usage of the tenant’s runs by agent, model, user or day, from the archive (approvers and admins)', {
    querystring: usageQuerySchema,
    response: { 200: usageResponseSchema, ...errors({ 403: ERROR_CODES[403], 409: 'archive_unavailable (no archive)' }) },
  }),
  getRun: route('runs', 'getRun', 'A run', {
    params: idParamsSchema,
    response: { 200: runViewSchema, ...errors({ 404: ERROR_CODES[404] }) },
  }),
  getTrace: route('runs', 'getRunTrace', 'A run’s steps, tool calls and observations', {
    params: idParamsSchema,
    response: { 200: runTraceSchema, ...errors({ 404: ERROR_CODES[404] }) },
  }),
  getSnapshots: route('runs', 'getRunSnapshots', 'The exact model requests and replies of a run (admins)', {
    params: idParamsSchema,
    response: { 200: snapshotListSchema, ...errors({ 403: ERROR_CODES[403], 404: ERROR_CODES[404] }) },
  }),
  cancelRun: route('runs', 'cancelRun', 'Cancel a run that has not finished', {
    params: idParamsSchema,
    response: { 200: receiptedSchema(runViewSchema), ...errors({ 404: ERROR_CODES[404], 409: 'run_finished' }) },
  }),
  compensateRun: route('runs', 'compensateRun', 'Undo a finished run’s completed writes, latest first (approvers and up)', {
    params: idParamsSchema,
    response: {
      202: receiptedSchema(compensationViewSchema),
      ...errors({ 403: ERROR_CODES[403], 404: ERROR_CODES[404], 409: 'run_not_finished, nothing_to_compensate, compensation_exists' }),
    },
  }),
  replayRun: route('runs', 'replayRun', 'Replay a finished run: real model calls, tool calls answered from its records', {
    params: idParamsSchema,
    body: replayRunBodySchema,
    response: {
      202: replayStartedSchema,
      ...errors({
        400: `${ERROR_CODES[400]}, unknown_model`,
        403: `${ERROR_CODES[403]} (liveReads on another user's run)`,
        404: ERROR_CODES[404],
        409: 'run_not_finished, original_unavailable, not_a_replay (a replay of a replay), replay_unsupported (a plan-mode run), version_not_live',
      }),
    },
  }),
  diffRun: route('runs', 'diffRun', 'What a replay did differently from its original', {
    params: idParamsSchema,
    response: { 200: runDiffSchema, ...errors({ 404: ERROR_CODES[404], 409: 'not_a_replay' }) },
  }),
  forkRun: route('runs', 'forkRun', 'A new live run from a finished run’s history up to a step', {
    params: idParamsSchema,
    body: forkRunBodySchema,
    response: {
      202: replayStartedSchema,
      ...errors({
        404: ERROR_CODES[404],
        409: 'run_not_finished, original_unavailable, not_a_replay (a fork of a replay), fork_step_unavailable',
      }),
    },
  }),
  createReplayCohort: route('runs', 'createReplayCohort', 'Replay recent finished runs of an agent, as a gate (approvers and up)', {
    body: createReplayCohortBodySchema,
    response: {
      202: replayCohortViewSchema,
      ...errors({
        400: `${ERROR_CODES[400]}, unknown_model`,
        403: ERROR_CODES[403],
        409: 'version_not_live (no worker runs it), too_many_cohorts (REIN_REPLAY_COHORTS_PER_TENANT run already)',
      }),
    },
  }),
  getReplayCohort: route('runs', 'getReplayCohort', 'A cohort replay’s progress and summary', {
    params: idParamsSchema,
    response: { 200: replayCohortViewSchema, ...errors({ 404: ERROR_CODES[404] }) },
  }),
  runEvents: route('runs', 'streamRunEvents', 'A run’s events, live; the stream ends after run.finished', {
    params: idParamsSchema,
    headers: resumeHeaders,
    querystring: resumeQuery,
    response: { 200: sse(runEventSchema, 'run events'), ...errors({ 404: ERROR_CODES[404], 429: 'too_many_streams' }) },
  }),
  getSession: route('sessions', 'getSession', 'A session’s runs, oldest first (sessions are per tenant and user)', {
    params: idParamsSchema,
    response: { 200: sessionViewSchema, ...errors({ 404: ERROR_CODES[404] }) },
  }),
  createSchedule: route('schedules', 'createSchedule', 'Run an agent on a cron schedule, as the caller', {
    body: createScheduleBodySchema,
    response: {
      201: receiptedSchema(scheduleViewSchema).describe('the schedule, with its next fire time'),
      ...errors({
        400: `${ERROR_CODES[400]}, invalid_cron, invalid_timezone, unknown_agent`,
        409: 'too_many_schedules',
        413: ERROR_CODES[413],
        415: ERROR_CODES[415],
      }),
    },
  }),
  listSchedules: route('schedules', 'listSchedules', 'The caller’s schedules (an admin’s: the tenant’s)', {
    response: { 200: scheduleListSchema, ...errors() },
  }),
  getSchedule: route('schedules', 'getSchedule', 'A schedule, its latest firings (newest first) and the runs they started', {
    params: idParamsSchema,
    response: { 200: scheduleDetailSchema, ...errors({ 404: ERROR_CODES[404] }) },
  }),
  patchSchedule: route('schedules', 'updateSchedule', 'Enable, disable or change a schedule’s cron, time zone or input', {
    params: idParamsSchema,
    body: patchScheduleBodySchema,
    response: {
      200: receiptedSchema(scheduleViewSchema),
      ...errors({ 400: `${ERROR_CODES[400]}, invalid_cron, invalid_timezone`, 404: ERROR_CODES[404], 415: ERROR_CODES[415] }),
    },
  }),
  deleteSchedule: route(
    'schedules',
    'deleteSchedule',
    'Remove a schedule (runs it started stay); its receipt, when signed, in the `rein-receipt` header (base64url JSON)',
    {
      params: idParamsSchema,
      response: { 204: z.null().describe('removed'), ...errors({ 404: ERROR_CODES[404] }) },
    },
  ),
  createWebhook: route('webhooks', 'createWebhook', 'Register a webhook (tenant admins); the answer is the only one with its secret', {
    body: createWebhookBodySchema,
    response: {
      201: receiptedSchema(createdWebhookSchema),
      ...errors({ 400: `${ERROR_CODES[400]}, webhook_url_refused`, 403: ERROR_CODES[403], 409: 'too_many_webhooks' }),
    },
  }),
  listWebhooks: route('webhooks', 'listWebhooks', 'The tenant’s webhooks (tenant admins)', {
    response: { 200: webhookListSchema, ...errors({ 403: ERROR_CODES[403] }) },
  }),
  deleteWebhook: route(
    'webhooks',
    'deleteWebhook',
    'Remove a webhook (tenant admins); its receipt, when signed, in the `rein-receipt` header (base64url JSON)',
    {
      params: idParamsSchema,
      response: { 204: z.null().describe('removed'), ...errors({ 403: ERROR_CODES[403], 404: ERROR_CODES[404] }) },
    },
  ),
  listVersions: route(
    'versions',
    'listVersions',
    'The fleet’s app versions: current, live workers, unfinished runs and queued jobs (operators); a tenant admin sees its own tenant’s runs and approvals only',
    {
      response: { 200: versionListSchema, ...errors({ 403: ERROR_CODES[403] }) },
    },
  ),
  promoteVersion: route(
    'versions',
    'promoteVersion',
    'New runs go to this app version, on every API process (operators: it is fleet-wide; 403 for tenant roles); also the rollback',
    {
      params: versionParamsSchema,
      body: promoteBodySchema,
      response: {
        200: receiptedSchema(versionListSchema),
        ...errors({ 403: ERROR_CODES[403], 404: ERROR_CODES[404], 409: 'version_not_live (no worker runs it; force to promote anyway)' }),
      },
    },
  ),
  versionImpact: route(
    'versions',
    'getVersionImpact',
    'What promoting this app version and upgrading another’s runs to it would change, changing nothing (operators): definitions that differ, approvals withdrawn, runs and schedules whose agent changed',
    {
      params: versionParamsSchema,
      querystring: versionImpactQuerySchema,
      response: {
        200: versionImpactSchema,
        ...errors({ 403: ERROR_CODES[403], 404: 'version_not_registered (no process of it registered what it serves)' }),
      },
    },
  ),
  upgradeVersion: route(
    'versions',
    'upgradeVersion',
    'Move every unfinished run and every queued job of this app version to another (operators: it is fleet-wide; 403 for tenant roles)',
    {
      params: versionParamsSchema,
      body: upgradeBodySchema,
      response: {
        202: receiptedSchema(upgradeAnswerSchema),
        ...errors({
          403: ERROR_CODES[403],
          404: ERROR_CODES[404],
          409: 'version_not_upgradable (it is the target), version_not_live (no worker runs the target)',
        }),
      },
    },
  ),
  webhookDeliveries: route('webhooks', 'listWebhookDeliveries', 'A webhook’s latest delivery attempts, newest first (tenant admins)', {
    params: idParamsSchema,
    response: { 200: deliveryLogSchema, ...errors({ 403: ERROR_CODES[403], 404: ERROR_CODES[404] }) },
  }),
  getAuditKeys: route('audit', 'getAuditKeys', 'The fleet’s audit public keys (Ed25519): what verifies a decision’s receipt offline', {
    response: { 200: auditKeysSchema, ...errors() },
  }),
  getAudit: route(
    'audit',
    'getAudit',
    'The tenant’s decision log, a hash chain, oldest first (tenant admins); `rein audit verify` checks it',
    {
      querystring: auditQuerySchema,
      response: { 200: auditPageSchema, ...errors({ 403: ERROR_CODES[403] }) },
    },
  ),
};

const decided = {
  params: idParamsSchema,
  response: {
    200: receiptedSchema(approvalViewSchema),
    ...errors({
      400: `${ERROR_CODES[400]}, invalid_arguments (edited arguments the tool refuses)`,
      403: ERROR_CODES[403],
      404: ERROR_CODES[404],
      409: 'approval_decided, approval_already_approved (each person approves once)',
      410: 'approval_expired',
    }),
  },
};

/** The console's settings: what the approver's operator configured for it. */
const consoleSettingsSchema = z.object({ traceUrlTemplate: z.string().optional() });

/** The approver's own routes; the run and schedule routes it also serves are documented by `apiRoutes` (http/run-routes.ts, http/schedule-routes.ts). */
export const approverRoutes = {
  consoleSettings: route('console', 'getConsoleSettings', 'What the console shows beyond the API: a trace UI link template', {
    response: { 200: consoleSettingsSchema, ...errors() },
  }),
  previewApproval: route(
    'approvals',
    'previewApproval',
    'Judge an edit without deciding: the risk and rule it would get, whether the caller may decide, the tools’ schemas',
    {
      params: idParamsSchema,
      body: previewBodySchema,
      response: { 200: approvalPreviewSchema, ...errors({ 400: `${ERROR_CODES[400]}, invalid_arguments`, 404: ERROR_CODES[404] }) },
    },
  ),
  listApprovals: route('approvals', 'listApprovals', 'Approvals of the caller’s tenant (their own unless approver or above)', {
    querystring: listApprovalsQuerySchema,
    response: { 200: approvalListSchema, ...errors() },
  }),
  approvalEvents: route('approvals', 'streamApprovalEvents', 'The tenant’s approval feed, live', {
    headers: resumeHeaders,
    querystring: resumeQuery,
    response: { 200: sse(approvalFeedEventSchema, 'approval feed events'), ...errors({ 429: 'too_many_streams' }) },
  }),
  approvalLoad: route(
    'approvals',
    'getApprovalLoad',
    'The tenant’s approval load (approvers and up): time to decision by tool and risk, decisions per approver per hour, the share within the SLA, expiries',
    {
      querystring: approvalLoadQuerySchema,
      response: { 200: approvalLoadSchema, ...errors({ 403: ERROR_CODES[403] }) },
    },
  ),
  uncertainEffects: route('approvals', 'listUncertainEffects', 'Writes whose outcome is unknown after a crash, to reconcile by hand', {
    response: { 200: uncertainEffectListSchema, ...errors() },
  }),
  getApproval: route('approvals', 'getApproval', 'An approval', {
    params: idParamsSchema,
    response: { 200: approvalViewSchema, ...errors({ 404: ERROR_CODES[404] }) },
  }),
  approvalTrace: route('approvals', 'getApprovalTrace', 'The trace of the approval’s run so far', {
    params: idParamsSchema,
    response: { 200: runTraceSchema, ...errors({ 404: ERROR_CODES[404] }) },
  }),
  approvalContext: route(
    'approvals',
    'getApprovalContext',
    'What an approver reads beside the call: input, thought, observations, the app’s fields, waiting time',
    {
      params: idParamsSchema,
      response: { 200: approvalContextViewSchema, ...errors({ 404: ERROR_CODES[404] }) },
    },
  ),
  approve: route('approvals', 'approve', 'Approve, optionally with edited arguments (judged again, never less strict)', {
    ...decided,
    body: approveBodySchema,
  }),
  decideMany: route(
    'approvals',
    'decideApprovals',
    'Approve or reject several approvals at once, each checked on its own (a result per id)',
    {
      body: batchDecideBodySchema,
      response: { 200: batchDecisionSchema, ...errors() },
    },
  ),
  createLinks: route(
    'approvals',
    'createApprovalLinks',
    'Single-use approve and reject links for one user (self, or a named user by an admin)',
    {
      params: idParamsSchema,
      body: createLinksBodySchema,
      response: {
        200: approvalLinksSchema,
        ...errors({
          403: ERROR_CODES[403],
          404: ERROR_CODES[404],
          409: 'approval_decided, console_url_unset (REIN_CONSOLE_URL is not set)',
        }),
      },
    },
  ),
  reject: route('approvals', 'reject', 'Reject with a reason (the model hears it)', { ...decided, body: rejectBodySchema }),
};
