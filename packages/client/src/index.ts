export type {
  ApprovalFeedEvent,
  ApprovalList,
  ApprovalView,
  CreatedWebhook,
  RunEvent,
  RunList,
  RunStatus,
  RunTrace,
  RunView,
  SessionView,
  WebhookEventType,
  WebhookPayload,
  WebhookView,
} from '@rein/core/schemas';
/** For webhook receivers: checks a delivery's Standard Webhooks signature and returns its body. */
export { verifyWebhook } from '@rein/core/verify-webhook';
export type { ReconnectPolicy, StreamedEvent, StreamOptions } from './event-stream.js';
export { ReinApiError, type ReinErrorCode, ReinWaitTimeoutError } from './rein-api-error.js';
export { type CreateRunOptions, ReinClient, type ReinClientOptions, type WaitOptions } from './rein-client.js';
