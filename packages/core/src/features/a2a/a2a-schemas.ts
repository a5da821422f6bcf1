import { addressableIdSchema, createWebhookBodySchema, MAX_ID_LENGTH } from '@rein/contract';
import { z } from 'zod';

/** A JSON-RPC 2.0 request as A2A sends it (no batches: A2A has none). */
export const jsonRpcRequestSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string().max(MAX_ID_LENGTH), z.number().int(), z.null()]).optional(),
  method: z.string().min(1).max(100),
  params: z.record(z.string(), z.unknown()).optional(),
});
export type JsonRpcRequest = z.infer<typeof jsonRpcRequestSchema>;

/** An id a client makes up (a message's): printable ASCII, bounded, so it can key idempotency. */
const clientIdSchema = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

const metadataSchema = z.record(z.string(), z.unknown()).optional();

/** One part of a message: text, structured data, or a file (which Rein's agents do not take). */
const partSchema = z
  .object({
    text: z.string().optional(),
    data: z.unknown().optional(),
    url: z.string().optional(),
    raw: z.string().optional(),
    mediaType: z.string().max(200).optional(),
    filename: z.string().max(500).optional(),
    metadata: metadataSchema,
  })
  .refine(
    (p) => [p.text, p.data, p.url, p.raw].filter((v) => v !== undefined).length === 1,
    'a part holds exactly one of text, data, url, raw',
  );

/** Protobuf's JSON leaves an unset string empty: an empty value is no value. */
const unsetIfEmpty = <T extends z.ZodTypeAny>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
const optionalId = unsetIfEmpty(addressableIdSchema);

export const a2aMessageSchema = z.object({
  messageId: clientIdSchema,
  contextId: optionalId,
  taskId: optionalId,
  role: z.enum(['ROLE_USER', 'ROLE_AGENT', 'ROLE_UNSPECIFIED']).optional(),
  parts: z.array(partSchema).min(1).max(64),
  metadata: metadataSchema,
  extensions: z.array(z.string().max(500)).max(32).optional(),
  referenceTaskIds: z.array(z.string().max(MAX_ID_LENGTH)).max(32).optional(),
});
export type A2aIncomingMessage = z.infer<typeof a2aMessageSchema>;

/** A header value Rein sends as given: printable ASCII, bounded, so it cannot split or bloat a request. */
const headerValue = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/, 'printable ASCII, no leading or trailing space');

/**
 * A push-notification config as a caller gives it (A2A's `TaskPushNotificationConfig`):
 * where Rein POSTs the task at each change of state. The URL obeys the webhooks' rules (http
 * or https, no credentials, 2000 characters); `token` comes back as `X-A2A-Notification-Token`
 * and keys the delivery's signature; `authentication` becomes the `Authorization` header.
 */
export const pushConfigSchema = z.object({
  tenant: z.string().max(MAX_ID_LENGTH).optional(),
  id: unsetIfEmpty(clientIdSchema),
  taskId: optionalId,
  url: createWebhookBodySchema.shape.url,
  token: unsetIfEmpty(headerValue(512)),
  authentication: z
    .object({
      scheme: z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/, 'an HTTP authentication scheme'),
      credentials: headerValue(4096),
    })
    .optional(),
});
export type PushConfigParams = z.infer<typeof pushConfigSchema>;

/** `GetTaskPushNotificationConfig`, `DeleteTaskPushNotificationConfig`: one config of a task. */
export const pushConfigIdParamsSchema = z.object({
  tenant: z.string().max(MAX_ID_LENGTH).optional(),
  taskId: addressableIdSchema,
  id: clientIdSchema,
});

/** `ListTaskPushNotificationConfigs`: a task's configs fit one page (at most MAX_PUSH_CONFIGS_PER_TASK). */
export const pushConfigListParamsSchema = z.object({
  tenant: z.string().max(MAX_ID_LENGTH).optional(),
  taskId: addressableIdSchema,
  pageSize: z.number().int().min(0).optional(),
  pageToken: z.string().max(MAX_ID_LENGTH).optional(),
});

export const sendMessageParamsSchema = z.object({
  tenant: z.string().max(MAX_ID_LENGTH).optional(),
  message: a2aMessageSchema,
  configuration: z
    .object({
      acceptedOutputModes: z.array(z.string().max(200)).max(32).optional(),
      historyLength: z.number().int().min(0).optional(),
      returnImmediately: z.boolean().optional(),
      taskPushNotificationConfig: pushConfigSchema.optional(),
    })
    .optional(),
  metadata: metadataSchema,
});
export type SendMessageParams = z.infer<typeof sendMessageParamsSchema>;

/** GetTask, CancelTask, SubscribeToTask: a task by id. */
export const taskIdParamsSchema = z.object({
  tenant: z.string().max(MAX_ID_LENGTH).optional(),
  id: addressableIdSchema,
  historyLength: z.number().int().min(0).optional(),
  metadata: metadataSchema,
});

/** The data part that decides an approval of an `input-required` task. */
export const a2aDecisionSchema = z
  .object({
    approvalId: z.string().min(1).max(MAX_ID_LENGTH),
    decision: z.enum(['approve', 'reject']),
    reason: z.string().trim().min(1).max(2000).optional(),
    arguments: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
