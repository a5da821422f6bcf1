export type {
  ApprovalFeedEvent,
  ApprovalList,
  ApprovalLoad,
  ApprovalPreview,
  ApprovalView,
  AuditKeys,
  AuditReceipt,
  CompensationView,
  CreatedWebhook,
  ErrorEnvelope,
  ReinErrorCode,
  ReplayCohortView,
  ReplayStarted,
  RunDiff,
  RunEventData,
  RunEventType,
  RunList,
  RunStatus,
  RunTrace,
  RunView,
  ScheduleDetail,
  ScheduleView,
  SessionView,
  TypedRunEvent as RunEvent,
  UsageQueryParams,
  UsageResponse,
  UsageRow,
  WebhookEventType,
  WebhookPayload,
  WebhookView,
} from '@rein/contract';
/** For webhook receivers: checks a delivery's Standard Webhooks signature and returns its body. */
export { verifyWebhook } from '@rein/contract';
export type { ReconnectPolicy, StreamedEvent, StreamOptions } from './event-stream.js';
export { ReinApiError, ReinNetworkError, ReinWaitTimeoutError } from './rein-api-error.js';
export { type CreateRunOptions, type Receipted, ReinClient, type ReinClientOptions, type WaitOptions } from './rein-client.js';
