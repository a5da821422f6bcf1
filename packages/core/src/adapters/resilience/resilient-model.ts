import { BulkheadFullError, ModelCallCutError, ModelReplyInvalidError, ModelUnavailableError, ReinError } from '../../shared/errors.js';
import type { Metrics } from '../../shared/metrics.js';
import { parseModelId } from '../../shared/provider-config.js';
import type { CompleteWith, ModelGateway, ModelLease } from '../model/model-gateway.js';
import { type CaptureContent, chatSpan } from '../tracing/genai.js';
import { Bulkhead } from './bulkhead.js';
import type { CircuitBreakers } from './circuit-breakers.js';
import type { FleetLimit, HeldLease } from './fleet-limit.js';

export interface ModelProtection {
  breakers: CircuitBreakers;
  fleetLimit: FleetLimit;
  metrics: Metrics;
  /** Calls to one model at once in this process, and how long a step may wait for a slot. */
  processConcurrency: number;
  maxWaitMs: number;
  /** Calls to one model at once across the whole fleet (the provider's limit). */
  fleetConcurrency: number;
  /** Prompts and completions on the chat spans (operator opt-in); absent, they are never exported. */
  captureContent?: CaptureContent;
  /** REIN_PROVIDERS, so each chat span names the provider a model id reaches; absent, every model is the default provider's. */
  providers?: Readonly<Record<string, unknown>>;
}

/**
 * The model gateway the workers use: models in order (primary, then
 * REIN_FALLBACK_MODELS, or the agent's own list), each behind its breaker, a per-process bulkhead and a
 * fleet-wide limit. A model whose breaker is open is skipped; transient failures and
 * broken replies move on to the next model; when none can answer, the error says when to
 * try again, and the worker delays the step without spending it — unless a model did
 * answer, brokenly: then the step spends an attempt (ModelReplyInvalidError). A step takes
 * the primary model's fleet lease with its read (`lease`); the call uses it for its first
 * model when that is the one leased, and gives it back otherwise.
 */
export function createResilientModelGateway(models: string[], complete: CompleteWith, p: ModelProtection): ModelGateway {
  const bulkheads = new Map<string, Bulkhead>();
  // An agent may name its own models, so bulkheads are made on first use of a model.
  const bulkheadOf = (m: string) => {
    let bulkhead = bulkheads.get(m);
    if (!bulkhead) {
      bulkhead = new Bulkhead(`model:${m}`, p.processConcurrency, p.maxWaitMs, (inFlight, rejected) => {
        p.metrics.bulkheadInFlight.set({ dependency: `model:${m}` }, inFlight);
        if (rejected) p.metrics.bulkheadRejections.inc({ dependency: `model:${m}`, scope: 'process' });
      });
      bulkheads.set(m, bulkhead);
    }
    return bulkhead;
  };
  const leaseMs = (timeoutMs: number) => timeoutMs + 5_000;
  const held = new WeakMap<ModelLease, HeldLease>();
  return {
    lease(timeoutMs) {
      const model = models[0];
      // At its own limit this process would hold a fleet slot while the call waits for a local one.
      if (!model || bulkheadOf(model).inFlight >= p.processConcurrency) return undefined;
      const lease = p.fleetLimit.take(`model:${model}`, p.fleetConcurrency, leaseMs(timeoutMs));
      const taken: ModelLease = { model, answered: lease.granted.catch(() => undefined), release: lease.release };
      held.set(taken, lease);
      return taken;
    },
    async complete(request) {
      let last: ReinError | undefined;
      let invalid: ModelReplyInvalidError | undefined;
      const chosen = request.models ?? models;
      // A lease taken ahead serves the first model only; the calls of any other ask for their own.
      const ahead = request.lease?.model === chosen[0] ? request.lease && held.get(request.lease) : undefined;
      if (!ahead) request.lease?.release();
      for (const model of chosen) {
        const dependency = `model:${model}`;
        try {
          // An open breaker makes breakers.call throw BreakerOpenError (retryable) without calling the model, and
          // the next model is tried; checking it here as well cost a Redis command on every call.
          return await bulkheadOf(model).run(() =>
            // The fleet lease brings the breaker's shared state with it: one round trip for both.
            p.fleetLimit.run(
              dependency,
              p.fleetConcurrency,
              leaseMs(request.timeoutMs),
              (state) =>
                // The span covers the call and its breaker (whose state it records), not the waits for a slot.
                chatSpan(model, parseModelId(model, p.providers ?? {}).provider, request, p.captureContent, () =>
                  p.breakers.call(dependency, () => complete(model, request), Promise.resolve(state)),
                ),
              model === chosen[0] ? ahead : undefined,
            ),
          );
        } catch (err) {
          request.lease?.release(); // unused when the first model's local slot never came
          // The run's time is up: no other model can answer within it.
          if (!(err instanceof ReinError) || !err.retryable || err instanceof ModelCallCutError) throw err;
          if (err instanceof BulkheadFullError && err.scope === 'fleet') p.metrics.bulkheadRejections.inc({ dependency, scope: 'fleet' });
          if (err instanceof ModelReplyInvalidError) invalid = err;
          last = err;
        }
      }
      // A broken reply is not an outage: the step is retried as a failed attempt, and ends model_reply_invalid.
      if (invalid) throw invalid;
      const retryAfter = last?.retryAfterMs;
      throw new ModelUnavailableError(
        `no model could answer (${chosen.join(', ')}): ${last?.message ?? 'none configured'}`,
        last,
        retryAfter,
      );
    },
  };
}
