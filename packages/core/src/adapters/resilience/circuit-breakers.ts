import { randomUUID } from 'node:crypto';
import CircuitBreaker from 'opossum';
import { BreakerOpenError, ModelCallCutError, ModelReplyInvalidError, ReinError } from '../../shared/errors.js';
import { breakerKeys } from '../../shared/keys.js';
import type { Logger } from '../../shared/logger.js';
import type { Metrics } from '../../shared/metrics.js';
import { BreakerReport, type ScriptGateway, scriptGateway } from '../redis/lua-scripts.js';
import type { RedisClient, RedisCommand } from '../redis/redis.js';
import { REIN_ATTR } from '../tracing/rein-spans.js';
import { annotateActiveSpan } from '../tracing/spans.js';

export interface BreakerOptions {
  /** Percentage of failed calls in the rolling window that opens the breaker. */
  errorThresholdPercentage: number;
  /** How long an open breaker stays open before one probe may test recovery. */
  resetTimeoutMs: number;
  /** Calls in the window before the percentage counts at all. */
  volumeThreshold: number;
  rollingCountTimeoutMs: number;
  /** How long one probe may take before another worker may probe instead. */
  probeTimeoutMs: number;
  /**
   * Distinct workers whose own breakers must open within `rollingCountTimeoutMs` before the
   * fleet's does (REIN_BREAKER_FLEET_WORKERS): one worker's broken path opens its breaker only.
   */
  fleetWorkers: number;
}

const STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

/** The shared keys' values: `open` (set while open, with the reset timeout as TTL) and `tripped`. */
export type FleetBreakerState = [open: string | null, tripped: string | null];

/**
 * Failures that say nothing about the dependency's health (a 4xx, a bad argument, a reply
 * that arrived but is broken) do not count: an endpoint that answers is not down. Nor does
 * a call the run's own deadline cut (ModelCallCutError; a tool's ToolCallCutError is not
 * retryable): one tenant's short deadlines must not open a breaker every tenant shares.
 */
const isHealthSignal = (err: unknown) =>
  !(err instanceof ReinError) || (err.retryable && !(err instanceof ModelReplyInvalidError) && !(err instanceof ModelCallCutError));

/**
 * One opossum breaker per dependency, with its state shared by the fleet through Redis.
 * Opossum counts failures locally (rolling window, volume threshold, percentage); when
 * it opens, this worker stops calling the dependency and reports it. Once `fleetWorkers`
 * distinct workers reported within the window, the report publishes `open` (with the
 * reset timeout as TTL) and `tripped`: a failure seen by one worker may be its own path's.
 * Every worker checks those keys before each call — so the others stop within one call,
 * well under a second — and after the reset only the worker that wins the `probe` key
 * sends the half-open probe; its success closes the breaker for everyone.
 */
export class CircuitBreakers {
  private readonly local = new Map<string, CircuitBreaker<[() => Promise<unknown>], unknown>>();
  private readonly redis: RedisClient;
  private readonly scripts: ScriptGateway;
  /** This process in the reports of its opened breakers. */
  private readonly worker = randomUUID();

  constructor(
    redis: RedisClient,
    private readonly options: BreakerOptions,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    private readonly now: () => number = Date.now,
  ) {
    this.redis = redis;
    this.scripts = scriptGateway(redis);
  }

  private breaker(name: string) {
    let breaker = this.local.get(name);
    if (breaker) return breaker;
    breaker = new CircuitBreaker((fn: () => Promise<unknown>) => fn(), {
      timeout: false, // callers bound their own time (model and tool timeouts)
      errorThresholdPercentage: this.options.errorThresholdPercentage,
      resetTimeout: this.options.resetTimeoutMs,
      volumeThreshold: this.options.volumeThreshold,
      rollingCountTimeout: this.options.rollingCountTimeoutMs,
      errorFilter: (err: unknown) => !isHealthSignal(err),
      name,
    });
    breaker.on('open', () => {
      this.event(name, 'open');
      this.metrics.breakerState.set({ breaker: name }, STATE_VALUE.open);
      void this.reportOpen(name).catch((err: Error) =>
        this.logger.warn({ breaker: name, err: err.message }, 'could not report an open breaker'),
      );
    });
    breaker.on('halfOpen', () => this.event(name, 'half_open'));
    breaker.on('close', () => this.event(name, 'close'));
    this.local.set(name, breaker);
    return breaker;
  }

  private event(name: string, event: string) {
    this.logger.warn({ breaker: name, event }, `circuit breaker ${event}`);
    this.metrics.breakerEvents.inc({ breaker: name, event });
  }

  private async reportOpen(name: string) {
    const k = breakerKeys(name);
    const { rollingCountTimeoutMs: windowMs, fleetWorkers, resetTimeoutMs } = this.options;
    const report = { worker: this.worker, nowMs: this.now(), windowMs, quorum: fleetWorkers, resetTimeoutMs };
    if ((await this.scripts.reportBreakerOpen(k, report)) === BreakerReport.FleetOpened) {
      this.event(name, 'fleet_open');
    }
  }

  /** A failed half-open probe opens the fleet's breaker again at once: it was open fleet-wide already. */
  private async publishOpen(name: string) {
    const k = breakerKeys(name);
    await this.redis.multi().set(k.open, '1', 'PX', this.options.resetTimeoutMs).set(k.tripped, '1').del(k.probe).exec();
    this.metrics.breakerState.set({ breaker: name }, STATE_VALUE.open);
  }

  /**
   * The fleet's view of the dependency (`open`, `tripped`): one command. A caller may start
   * it early, beside another round trip, and hand it to `call`; a failed read fails the call.
   */
  readState(name: string): Promise<FleetBreakerState> {
    const k = breakerKeys(name);
    return this.redis.mget(k.open, k.tripped) as Promise<FleetBreakerState>;
  }

  /** The same read as a command, for a caller to send with others; its reply is a FleetBreakerState. */
  static stateRead(name: string): RedisCommand {
    const k = breakerKeys(name);
    return ['mget', k.open, k.tripped];
  }

  /** Runs `fn` through the dependency's breaker, or throws BreakerOpenError without calling it. */
  async call<T>(name: string, fn: () => Promise<T>, state: Promise<FleetBreakerState> = this.readState(name)): Promise<T> {
    const k = breakerKeys(name);
    const breaker = this.breaker(name);
    // One command on the hot path; the open breaker's remaining time only when it is open.
    const [open, tripped] = await state;
    if (open) {
      annotateActiveSpan({ [REIN_ATTR.breakerState]: 'open' });
      throw new BreakerOpenError(name, Math.max(await this.redis.pttl(k.open), 100));
    }

    if (tripped) {
      // Half-open: one probe for the whole fleet.
      const prober = randomUUID();
      const won = await this.redis.set(k.probe, prober, 'PX', this.options.probeTimeoutMs, 'NX');
      annotateActiveSpan({ [REIN_ATTR.breakerState]: won ? 'half_open' : 'open' });
      if (!won) throw new BreakerOpenError(name, 1000);
      this.metrics.breakerState.set({ breaker: name }, STATE_VALUE.half_open);
      try {
        const result = await fn();
        await this.redis.del(k.tripped, k.probe);
        breaker.close();
        this.metrics.breakerState.set({ breaker: name }, STATE_VALUE.closed);
        return result;
      } catch (err) {
        if (isHealthSignal(err)) await this.publishOpen(name);
        else await this.redis.del(k.probe);
        throw err;
      }
    }

    // Closed fleet-wide; this worker's own breaker may still be open (its path to the dependency failed): opossum decides.
    annotateActiveSpan({ [REIN_ATTR.breakerState]: breaker.opened ? 'open' : breaker.halfOpen ? 'half_open' : 'closed' });
    this.metrics.breakerState.set(
      { breaker: name },
      breaker.opened ? STATE_VALUE.open : breaker.halfOpen ? STATE_VALUE.half_open : STATE_VALUE.closed,
    );
    try {
      return (await breaker.fire(fn)) as T;
    } catch (err) {
      // Opened by this very failure, or by a concurrent one: the caller retries later.
      if (CircuitBreaker.isOurError(err as Error)) throw new BreakerOpenError(name, this.options.resetTimeoutMs);
      throw err;
    }
  }

  /** Whether the fleet considers the dependency unavailable right now (for fallbacks). */
  async isOpen(name: string): Promise<boolean> {
    return (await this.redis.exists(breakerKeys(name).open)) === 1;
  }

  shutdown(): void {
    for (const breaker of this.local.values()) breaker.shutdown();
  }
}
