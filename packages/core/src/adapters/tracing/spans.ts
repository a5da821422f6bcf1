import { type Attributes, type Context, context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ReinError } from '../../shared/errors.js';

/** Rein's instrumentation scope. Without a registered SDK the API hands out no-op spans: nothing is recorded or sent. */
const TRACER = 'rein';

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Parent context; the active one when omitted. */
  parent?: Context;
}

/** `error.type` for a failure: a ReinError's stable code, else the error's class name (never its message: it may hold PII). */
const errorType = (err: unknown) => (err instanceof ReinError ? err.code : err instanceof Error ? err.name : 'unknown');

/**
 * Runs `fn` inside a span made active for everything it awaits, and ends it. A throw
 * marks the span failed with its `error.type`; errors listed by name in `notFailures`
 * (BullMQ's DelayedError: "later", not "failed") end the span unmarked.
 */
export async function inSpan<T>(name: string, opts: SpanOptions & { notFailures?: string[] }, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = trace.getTracer(TRACER).startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    if (!(err instanceof Error && opts.notFailures?.includes(err.name))) {
      span.setAttribute('error.type', errorType(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorType(err) });
    }
    throw err;
  } finally {
    span.end();
  }
}

/** Adds attributes to the active span (a breaker state seen deep inside a call); a no-op without one. */
export function annotateActiveSpan(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes);
}
