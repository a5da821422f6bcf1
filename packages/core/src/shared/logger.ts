import { isSpanContextValid, trace } from '@opentelemetry/api';
import { type Logger, pino } from 'pino';
import type { PiiMasker } from './guards/pii-masker.js';

/**
 * Redaction paths are static: secrets and PII-bearing fields never reach a log line,
 * whatever the caller passes. Model prompts and tool arguments are not logged at all.
 */
const REDACT = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'apiKey',
  '*.apiKey',
  'key',
  'OPENAI_API_KEY',
  'REIN_API_KEYS',
  'arguments',
  '*.arguments',
  'input',
  'messages',
];

/** The active span's ids for a log line, so logs and traces join; nothing outside a span (always so without the SDK). */
export function logTraceFields(): { trace_id?: string; span_id?: string } {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/**
 * Secrets are removed by path; PII inside any other string field (a phone number in an
 * error message, say) is masked by value, except in allow-listed fields such as ids.
 */
export function createLogger(
  level: string,
  service: string,
  masker?: PiiMasker,
  destination: pino.DestinationStream = pino.destination(1),
): Logger {
  return pino(
    {
      level,
      base: { service },
      // trace_id/span_id of the active span, so a log line leads to its trace (nothing when tracing is off).
      mixin: logTraceFields,
      redact: { paths: REDACT, censor: '[redacted]' },
      hooks: {
        logMethod(args, method) {
          method.apply(this, (masker ? args.map((a) => masker.maskDeep(a)) : args) as Parameters<typeof method>);
        },
      },
    },
    destination,
  );
}

export type { Logger };
