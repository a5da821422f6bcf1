import type { z } from 'zod';
import type { errorEnvelopeSchema } from './views.js';

/** Every error answer of the API and the approver, `{"error":{"code","message"}}`. */
export type ErrorEnvelope = z.infer<typeof errorEnvelopeSchema>;

/**
 * The stable `code`s of the error envelope (the OpenAPI document lists them per route):
 * branch on these, never on `message`. Others may be added, so any string is possible.
 */
export type ReinErrorCode =
  | 'invalid_request'
  | 'invalid_json'
  | 'bad_request'
  | 'bad_url'
  | 'path_too_long'
  | 'unknown_agent'
  | 'limit_above_ceiling'
  | 'invalid_arguments'
  | 'invalid_cursor'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'session_busy'
  | 'idempotency_key_in_flight'
  | 'run_finished'
  | 'run_not_finished'
  | 'nothing_to_compensate'
  | 'compensation_exists'
  | 'approval_decided'
  | 'approval_already_approved'
  | 'link_used'
  | 'link_expired'
  | 'console_url_unset'
  | 'too_many_webhooks'
  | 'approval_expired'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'headers_too_large'
  | 'idempotency_key_reused'
  | 'too_many_streams'
  | 'quota_concurrent_runs'
  | 'quota_tokens'
  | 'quota_parked_runs'
  | 'quota_cost'
  | 'webhook_url_refused'
  | 'webhook_url_unresolvable'
  | 'unavailable'
  | 'redis_unavailable'
  | 'archive_unavailable'
  | 'version_not_live'
  | 'too_many_cohorts'
  | 'version_not_upgradable'
  | 'not_a_replay'
  | 'original_unavailable'
  | 'fork_step_unavailable'
  | 'replay_unsupported'
  | 'unknown_model'
  | 'chat_message_required'
  | 'chat_regenerate_unsupported'
  | 'ag_ui_message_required'
  | (string & {});
