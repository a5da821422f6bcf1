import { isSpanContextValid, type Span, SpanKind } from '@opentelemetry/api';
import { ATTR_GEN_AI_TOOL_NAME } from '@opentelemetry/semantic-conventions/incubating';
import type { StepJob } from '../queue/job-catalog.js';
import { inSpan } from './spans.js';
import { contextOf, formatTraceparent, newTraceparent } from './trace-context.js';

/** Rein's own span attributes (the GenAI conventions name the rest). */
export const REIN_ATTR = {
  runId: 'rein.run.id',
  step: 'rein.step',
  job: 'rein.job',
  stepOutcome: 'rein.step.outcome',
  toolOutcome: 'rein.tool.outcome',
  approvalId: 'rein.approval.id',
  approvalDecision: 'rein.approval.decision',
  approvalDecidedBy: 'rein.approval.decided_by',
  approvalEdited: 'rein.approval.edited',
  effectOutcome: 'rein.effect.outcome',
  breakerState: 'rein.breaker.state',
  /** The app version of the worker that ran the step. */
  appVersion: 'rein.app.version',
} as const;

/**
 * The submit span, a child of the caller's `traceparent` (a malformed one is ignored:
 * a new trace). Its context becomes the run's trace; without the SDK there is no span
 * of our own, so the run keeps the caller's context or gets a freshly minted one.
 */
export function submitSpan<T>(callerTraceparent: string | undefined, fn: (runTraceparent: string, span: Span) => Promise<T>): Promise<T> {
  return inSpan('rein.run.submit', { kind: SpanKind.SERVER, parent: contextOf(callerTraceparent) }, (span) => {
    const sc = span.spanContext();
    return fn(isSpanContextValid(sc) ? formatTraceparent(sc) : newTraceparent(), span);
  });
}

/**
 * One span per step job, continuing the trace the job carries; everything the step
 * does (model call, tools, the next job it enqueues) nests under it. A step put back
 * for later (BullMQ's DelayedError) is not a failure.
 */
export function stepSpan<T>(job: string, payload: StepJob, fn: () => Promise<T>, appVersion?: string): Promise<T> {
  const attributes = {
    [REIN_ATTR.runId]: payload.runId,
    [REIN_ATTR.step]: payload.step,
    [REIN_ATTR.job]: job,
    ...(appVersion ? { [REIN_ATTR.appVersion]: appVersion } : {}),
  };
  const opts = { kind: SpanKind.CONSUMER, parent: contextOf(payload.traceparent), attributes, notFailures: ['DelayedError'] };
  return inSpan('rein.step', opts, async (span) => {
    const outcome = await fn();
    span.setAttribute(REIN_ATTR.stepOutcome, String(outcome));
    return outcome;
  });
}

/**
 * A person's decision on an approval, as a span in the run's trace (a child of the
 * run's context, like the resume it leads to), so the wait between the parked step and
 * the resumed one shows who decided what. Ids only: no comment, reason or arguments.
 */
export function decisionSpan<T>(
  run: { id: string; traceparent?: string },
  approval: { id: string; toolName: string },
  decidedBy: string,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const attributes = {
    [REIN_ATTR.runId]: run.id,
    [REIN_ATTR.approvalId]: approval.id,
    [ATTR_GEN_AI_TOOL_NAME]: approval.toolName,
    [REIN_ATTR.approvalDecidedBy]: decidedBy,
  };
  return inSpan('rein.approval.decide', { parent: contextOf(run.traceparent), attributes }, fn);
}
