import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorEnvelope } from '@rein/contract';
import { envelope, ReinError } from '../shared/errors.js';

export type { ErrorEnvelope };

/** Fastify's own errors, each with a stable code and a message that names nothing internal. */
const FRAMEWORK: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_BAD_URL: { status: 400, code: 'bad_url', message: 'the path is not valid percent-encoding' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: 'path_too_long', message: 'a path segment is too long' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type', message: 'send application/json' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'the body is larger than allowed' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json', message: 'the body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json', message: 'the body is empty but says it is JSON' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'invalid_request', message: 'content-length does not match the body' },
};

const BY_STATUS: Record<number, string> = {
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
};

export interface PublicError {
  status: number;
  body: ErrorEnvelope;
  /** Whether it is our fault (log it with its stack); the caller never sees why. */
  internal: boolean;
}

/**
 * What a caller may learn from an error: Rein's own errors as they are, Fastify's by a
 * fixed table, anything else 4xx by its status, and every 5xx as a bare 503 (Redis
 * away is the usual cause: come back later) — never a message from inside.
 */
export function publicError(err: unknown): PublicError {
  if (err instanceof ReinError) {
    return { status: err.status, body: envelope(err.code, err.message), internal: err.status >= 500 };
  }
  const { code, statusCode } = (err ?? {}) as { code?: string; statusCode?: number };
  const known = code ? FRAMEWORK[code] : undefined;
  if (known) return { status: known.status, body: envelope(known.code, known.message), internal: false };
  const status = statusCode ?? 500;
  if (status >= 500 || status < 400) {
    return { status: 503, body: envelope('unavailable', 'service temporarily unavailable'), internal: true };
  }
  return { status, body: envelope(BY_STATUS[status] ?? 'invalid_request', STATUS_CODES[status] ?? 'bad request'), internal: false };
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (a body trickled past
 * the request timeout, oversized headers, garbage): answered in the envelope, then closed.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'the request took too long to arrive']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'the request headers are too large']
        : [400, 'bad_request', 'the request is not valid HTTP'];
  const body = JSON.stringify(envelope(code, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
