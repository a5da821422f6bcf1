import { randomBytes } from 'node:crypto';
import { type Context, context, isSpanContextValid, ROOT_CONTEXT, type SpanContext, TraceFlags, trace } from '@opentelemetry/api';
import { z } from 'zod';

/** A W3C `traceparent` (version 00): the only trace context Rein persists or sends through the queue. */
export const traceparentSchema = z
  .string()
  .regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, 'a W3C traceparent (00-<trace-id>-<span-id>-<flags>)');

export const formatTraceparent = (sc: SpanContext) =>
  `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;

/** Parses a traceparent; anything malformed or all-zero is ignored (W3C: start a new trace). */
export function parseTraceparent(value: string | undefined): SpanContext | undefined {
  if (!value || !traceparentSchema.safeParse(value).success) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = value.split('-');
  const sc: SpanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

/** The context to start a span under: the traceparent's span as a remote parent, or a new trace. */
export function contextOf(traceparent: string | undefined): Context {
  const sc = parseTraceparent(traceparent);
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/** The active span as a traceparent (what a job enqueued now carries), if a span is active. */
export function activeTraceparent(): string | undefined {
  const sc = trace.getSpanContext(context.active());
  return sc && isSpanContextValid(sc) ? formatTraceparent(sc) : undefined;
}

/** A fresh, unsampled root context: a run's trace id when there is neither a span nor a caller's trace. */
export const newTraceparent = () =>
  formatTraceparent({ traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: TraceFlags.NONE });

export const traceIdOf = (traceparent: string) => traceparent.slice(3, 35);
