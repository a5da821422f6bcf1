import { z } from 'zod';

export const webhookEventTypeSchema = z.enum([
  'run.finished',
  'approval.requested',
  'approval.decided',
  'approval.withdrawn',
  'approval.escalated',
  'effect.uncertain',
  'run.compensated',
  'compensation.failed',
]);
export type WebhookEventType = z.infer<typeof webhookEventTypeSchema>;

/** `POST /v1/webhooks`. */
export const createWebhookBodySchema = z
  .object({
    url: z
      .string()
      .max(2000)
      .url()
      .refine((u) => /^https?:$/.test(new URL(u).protocol), 'only http and https URLs')
      .refine((u) => {
        const { username, password } = new URL(u);
        return !username && !password;
      }, 'no credentials in the URL: the signature (or a secret path) authenticates deliveries'),
    events: z.array(webhookEventTypeSchema).min(1).max(webhookEventTypeSchema.options.length),
  })
  .strict();
export type CreateWebhookBody = z.infer<typeof createWebhookBodySchema>;

/** A webhook as stored (its secret signs every delivery). */
export const webhookSchema = z.object({
  schemaVersion: z.literal(1),
  id: z.string(),
  tenantId: z.string(),
  url: z.string(),
  events: z.array(webhookEventTypeSchema),
  secret: z.string().startsWith('whsec_'),
  createdBy: z.string(),
  createdAt: z.string(),
});
export type Webhook = z.infer<typeof webhookSchema>;

/** What `GET /v1/webhooks` shows: everything but the secret, which only the 201 of its creation carries. */
export const webhookViewSchema = webhookSchema.omit({ schemaVersion: true, tenantId: true, secret: true });
export type WebhookView = z.infer<typeof webhookViewSchema>;

/** The 201 of `POST /v1/webhooks`: the only response that carries the secret. */
export const createdWebhookSchema = webhookViewSchema.extend({ secret: webhookSchema.shape.secret });
export type CreatedWebhook = z.infer<typeof createdWebhookSchema>;
export const webhookListSchema = z.object({ webhooks: z.array(webhookViewSchema) });

/** The body of every delivery (Standard Webhooks shape). */
export const webhookPayloadSchema = z.object({
  type: webhookEventTypeSchema,
  timestamp: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;

/** One attempt in a webhook's delivery log (`GET /v1/webhooks/:id/deliveries`). */
export const deliveryAttemptSchema = z.object({
  messageId: z.string(),
  type: webhookEventTypeSchema,
  attempt: z.number().int().min(1),
  at: z.string(),
  outcome: z.enum(['delivered', 'failed', 'gave_up', 'refused']),
  status: z.number().int().optional(),
  error: z.string().optional(),
  durationMs: z.number().min(0),
});
export type DeliveryAttempt = z.infer<typeof deliveryAttemptSchema>;

/** `GET /v1/webhooks/:id/deliveries`: newest first. */
export const deliveryLogSchema = z.object({ webhookId: z.string(), attempts: z.array(deliveryAttemptSchema) });
export type DeliveryLog = z.infer<typeof deliveryLogSchema>;
