import type {
  ApprovalContextView,
  ApprovalFeedEvent,
  ApprovalList,
  ApprovalLoad,
  ApprovalPreview,
  ApprovalView,
  ApproveBody,
  AuditKeys,
  AuditPage,
  AuditReceipt,
  BatchDecideBody,
  BatchDecision,
  CompensationView,
  CreatedWebhook,
  CreateReplayCohortBody,
  CreateScheduleInput,
  CreateWebhookBody,
  DeliveryLog,
  ForkRunBody,
  ListApprovalsParams,
  ListRunsParams,
  PatchScheduleBody,
  Principal,
  ReplayCohortView,
  ReplayRunBody,
  ReplayStarted,
  RunDiff,
  RunList,
  RunTrace,
  RunView,
  ScheduleDetail,
  ScheduleView,
  SessionView,
  SnapshotList,
  SubmitRunInput,
  TypedRunEvent,
  UncertainEffectList,
  UpgradeAnswer,
  UpgradeBody,
  UsageQueryParams,
  UsageResponse,
  VersionImpact,
  VersionList,
  WebhookView,
} from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';
import { reconnectingStream, type StreamedEvent, type StreamOptions } from './event-stream.js';
import { ReinApiError, ReinNetworkError, ReinWaitTimeoutError } from './rein-api-error.js';

/** A decision's answer: with its signed receipt when the fleet has an audit key (`rein audit verify --receipt`). */
export type Receipted<T> = T & { receipt?: AuditReceipt };

export interface ReinClientOptions {
  /** The runs API, e.g. `http://127.0.0.1:8080`. */
  apiUrl: string;
  /** The approver service (approvals); the API's URL when both sit behind one gateway. */
  approverUrl?: string;
  /** An API key from REIN_API_KEYS; it decides tenant, user and roles. */
  apiKey: string;
  /** Another fetch (a test double, a proxy-aware one); the global one by default. */
  fetch?: typeof fetch;
  /** Streams: first pause before reconnecting (default 250 ms) and consecutive failures tolerated (default 10). */
  reconnect?: { retryDelayMs?: number; maxRetries?: number };
}

export interface CreateRunOptions {
  /** Sending the same key with the same body again answers the same run instead of starting another. */
  idempotencyKey?: string;
  /** W3C trace context: the run joins the caller's trace. */
  traceparent?: string;
}

export interface WaitOptions {
  /**
   * What to wait for: `'finished'`, the end of the run; `'settled'` (the default), the end or
   * the run parked on an approval nobody has decided yet. A park whose approvals are all
   * decided (the run about to resume) is neither: `wait` right after a decision waits on.
   */
  until?: 'settled' | 'finished';
  /** Give up with `ReinWaitTimeoutError` after this long (default 60 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The statuses a run ends in (the contract's plain list: it bundles no zod). */
export const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);

/** Whether `run` is what a wait `until` asks for. */
const reached = (run: RunView, until: NonNullable<WaitOptions['until']>) =>
  TERMINAL.has(run.status) || (until === 'settled' && run.status === 'pending_approval' && run.pendingApprovals.length > 0);

type Query = Record<string, string | number | undefined>;

/**
 * Rein over HTTP, typed by the same zod schemas that validate the server's routes.
 * Every error answer throws a `ReinApiError` carrying the stable `code`.
 */
export class ReinClient {
  private readonly fetch: typeof fetch;
  private readonly apiUrl: string;
  private readonly approverUrl: string;
  private readonly policy: { retryDelayMs: number; maxRetries: number };

  constructor(private readonly options: ReinClientOptions) {
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.apiUrl = options.apiUrl.replace(/\/+$/, '');
    this.approverUrl = (options.approverUrl ?? options.apiUrl).replace(/\/+$/, '');
    this.policy = { retryDelayMs: options.reconnect?.retryDelayMs ?? 250, maxRetries: options.reconnect?.maxRetries ?? 10 };
  }

  /** The caller as the API key identifies it. */
  me(): Promise<Principal> {
    return this.call(this.apiUrl, 'GET', '/v1/me');
  }

  readonly runs = {
    create: (body: SubmitRunInput, opts: CreateRunOptions = {}): Promise<RunView> =>
      this.call(this.apiUrl, 'POST', '/v1/runs', {
        body,
        headers: {
          ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}),
          ...(opts.traceparent ? { traceparent: opts.traceparent } : {}),
        },
      }),
    get: (id: string): Promise<RunView> => this.call(this.apiUrl, 'GET', `/v1/runs/${enc(id)}`),
    trace: (id: string): Promise<RunTrace> => this.call(this.apiUrl, 'GET', `/v1/runs/${enc(id)}/trace`),
    /** The exact model requests and replies (admin keys only). */
    snapshots: (id: string): Promise<SnapshotList> => this.call(this.apiUrl, 'GET', `/v1/runs/${enc(id)}/snapshots`),
    cancel: (id: string): Promise<Receipted<RunView>> => this.call(this.apiUrl, 'POST', `/v1/runs/${enc(id)}/cancel`),
    /** Undo a finished run's completed writes, latest first (approvers and up); the compensation is itself a saga to follow. */
    compensate: (id: string): Promise<Receipted<CompensationView>> => this.call(this.apiUrl, 'POST', `/v1/runs/${enc(id)}/compensate`),
    /** Replay a finished run: its model calls are real, its tool calls are answered from its records (docs/replay.md). */
    replay: (id: string, body: ReplayRunBody = {}): Promise<ReplayStarted> =>
      this.call(this.apiUrl, 'POST', `/v1/runs/${enc(id)}/replay`, { body }),
    /** What a replay did differently from its original. */
    diff: (id: string): Promise<RunDiff> => this.call(this.apiUrl, 'GET', `/v1/runs/${enc(id)}/diff`),
    /** A new live run from a finished run's history before step `fromStep`. */
    fork: (id: string, body: ForkRunBody): Promise<ReplayStarted> => this.call(this.apiUrl, 'POST', `/v1/runs/${enc(id)}/fork`, { body }),
    /** One page; pass `nextCursor` back as `cursor` for the next. */
    list: (params: ListRunsParams = {}): Promise<RunList> => this.call(this.apiUrl, 'GET', '/v1/runs', { query: params }),
    /**
     * The run once it has finished, or (`until: 'settled'`, the default) is parked on an
     * approval still to be decided. Follows the run's event stream rather than polling;
     * throws `ReinWaitTimeoutError` after `timeoutMs`.
     */
    wait: async (id: string, opts: WaitOptions = {}): Promise<RunView> => {
      const until = opts.until ?? 'settled';
      const timeoutMs = opts.timeoutMs ?? 60_000;
      const stop = new AbortController();
      const timer = setTimeout(() => stop.abort(), timeoutMs);
      const onAbort = () => stop.abort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        let run = await this.runs.get(id);
        if (reached(run, until)) return run;
        for await (const { event } of this.runs.stream(id, { signal: stop.signal })) {
          if (event.type !== 'approval.requested' && event.type !== 'run.finished') continue;
          run = await this.runs.get(id);
          if (reached(run, until)) return run;
        }
        if (stop.signal.aborted) throw opts.signal?.aborted ? opts.signal.reason : new ReinWaitTimeoutError(id, timeoutMs);
        return await this.runs.get(id);
      } finally {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      }
    },
    /**
     * The run's events as they happen (from the start, or after `lastEventId`), ending
     * after its own `run.finished` (a sub-agent's, which a parent's stream carries too, does
     * not end it). Dropped connections are resumed with Last-Event-ID: no event is lost or repeated.
     */
    stream: (id: string, opts: StreamOptions = {}): AsyncGenerator<StreamedEvent<TypedRunEvent>> =>
      reconnectingStream(
        (last, signal) => this.open(this.apiUrl, `/v1/runs/${enc(id)}/events`, last, signal),
        (data) => data as TypedRunEvent,
        (event) => event.type === 'run.finished' && event.runId === id,
        opts,
        this.policy,
      ),
  };

  readonly sessions = {
    get: (id: string): Promise<SessionView> => this.call(this.apiUrl, 'GET', `/v1/sessions/${enc(id)}`),
  };

  readonly approvals = {
    list: (params: ListApprovalsParams = {}): Promise<ApprovalList> =>
      this.call(this.approverUrl, 'GET', '/v1/approvals', { query: params }),
    get: (id: string): Promise<ApprovalView> => this.call(this.approverUrl, 'GET', `/v1/approvals/${enc(id)}`),
    /** The trace of the approval's run so far: what the approver decides on. */
    trace: (id: string): Promise<RunTrace> => this.call(this.approverUrl, 'GET', `/v1/approvals/${enc(id)}/trace`),
    /** What the approver reads beside the call: the run's input, the thought, the last observations, the app's fields. */
    context: (id: string): Promise<ApprovalContextView> => this.call(this.approverUrl, 'GET', `/v1/approvals/${enc(id)}/context`),
    /** Several at once (at most 100), each checked and recorded on its own: one result per id, in order. */
    decideMany: (body: BatchDecideBody): Promise<BatchDecision> => this.call(this.approverUrl, 'POST', '/v1/approvals/decide', { body }),
    /** Approve; `arguments` replaces what the model proposed (validated and judged again). */
    approve: (id: string, body: ApproveBody = {}): Promise<Receipted<ApprovalView>> =>
      this.call(this.approverUrl, 'POST', `/v1/approvals/${enc(id)}/approve`, { body }),
    reject: (id: string, reason: string): Promise<Receipted<ApprovalView>> =>
      this.call(this.approverUrl, 'POST', `/v1/approvals/${enc(id)}/reject`, { body: { reason } }),
    /** Judges an edit without deciding: the risk and rule it would get, whether the caller may decide, the tools' JSON Schemas. */
    preview: (id: string, edited?: Record<string, unknown>): Promise<ApprovalPreview> =>
      this.call(this.approverUrl, 'POST', `/v1/approvals/${enc(id)}/preview`, { body: edited ? { arguments: edited } : {} }),
    uncertainEffects: (): Promise<UncertainEffectList> => this.call(this.approverUrl, 'GET', '/v1/effects/uncertain'),
    /** The tenant's approval load over the last `hours` (default 24; approvers and up): time to decision, per approver, SLA, expiries. */
    load: (params: { hours?: number } = {}): Promise<ApprovalLoad> =>
      this.call(this.approverUrl, 'GET', '/v1/approvals/load', { query: params }),
    /** The tenant's approval feed, live and endless (end it with `signal`); resumed like `runs.stream`. */
    stream: (opts: StreamOptions = {}): AsyncGenerator<StreamedEvent<ApprovalFeedEvent>> =>
      reconnectingStream(
        (last, signal) => this.open(this.approverUrl, '/v1/approvals/events', last, signal),
        (data) => data as ApprovalFeedEvent,
        () => false,
        opts,
        this.policy,
      ),
  };

  /** Cohort replays of an agent's recent finished runs, as a gate before a deploy (approvers and admins). */
  readonly replays = {
    create: (body: CreateReplayCohortBody): Promise<ReplayCohortView> => this.call(this.apiUrl, 'POST', '/v1/replays', { body }),
    get: (id: string): Promise<ReplayCohortView> => this.call(this.apiUrl, 'GET', `/v1/replays/${enc(id)}`),
  };

  /** Usage of the tenant's archived runs, summed by agent, model, user or day (approvers and admins; needs the run archive). */
  usage(params: UsageQueryParams): Promise<UsageResponse> {
    return this.call(this.apiUrl, 'GET', '/v1/usage', { query: params });
  }
  /** Agents on a cron schedule, each firing a run as their creator (a user's own; an admin's: the tenant's). */
  readonly schedules = {
    create: (body: CreateScheduleInput): Promise<Receipted<ScheduleView>> => this.call(this.apiUrl, 'POST', '/v1/schedules', { body }),
    list: async (): Promise<ScheduleView[]> =>
      (await this.call<{ schedules: ScheduleView[] }>(this.apiUrl, 'GET', '/v1/schedules')).schedules,
    get: (id: string): Promise<ScheduleDetail> => this.call(this.apiUrl, 'GET', `/v1/schedules/${enc(id)}`),
    update: (id: string, body: PatchScheduleBody): Promise<ScheduleView> =>
      this.call(this.apiUrl, 'PATCH', `/v1/schedules/${enc(id)}`, { body }),
    delete: async (id: string): Promise<void> => {
      await this.call(this.apiUrl, 'DELETE', `/v1/schedules/${enc(id)}`);
    },
  };

  /** Tenant admins only. */
  readonly webhooks = {
    /** The answer is the only place the signing secret (`whsec_…`) ever appears: keep it. */
    create: (body: CreateWebhookBody): Promise<Receipted<CreatedWebhook>> => this.call(this.apiUrl, 'POST', '/v1/webhooks', { body }),
    list: async (): Promise<WebhookView[]> => (await this.call<{ webhooks: WebhookView[] }>(this.apiUrl, 'GET', '/v1/webhooks')).webhooks,
    delete: async (id: string): Promise<void> => {
      await this.call(this.apiUrl, 'DELETE', `/v1/webhooks/${enc(id)}`);
    },
    deliveries: (id: string): Promise<DeliveryLog> => this.call(this.apiUrl, 'GET', `/v1/webhooks/${enc(id)}/deliveries`),
  };

  /** The fleet's app versions (admin keys): list, promote (where new runs go; also the rollback), upgrade (move a version's runs). */
  readonly versions = {
    list: (): Promise<VersionList> => this.call(this.apiUrl, 'GET', '/v1/versions'),
    promote: (version: string, opts: { force?: boolean } = {}): Promise<Receipted<VersionList>> =>
      this.call(this.apiUrl, 'POST', `/v1/versions/${enc(version)}/promote`, { body: opts }),
    /** Operators: what promoting `version` (and upgrading `against`'s runs to it) would change; changes nothing. */
    impact: (version: string, opts: { against?: string } = {}): Promise<VersionImpact> =>
      this.call(this.apiUrl, 'GET', `/v1/versions/${enc(version)}/impact`, { query: opts }),
    upgrade: (version: string, body: UpgradeBody = {}): Promise<Receipted<UpgradeAnswer>> =>
      this.call(this.apiUrl, 'POST', `/v1/versions/${enc(version)}/upgrade`, { body }),
  };

  /** Tenant admins only: the decision log, oldest first (`rein audit verify` checks its chain). */
  readonly audit = {
    page: (params: { from?: string; to?: string; cursor?: string; limit?: number } = {}): Promise<AuditPage> =>
      this.call(this.apiUrl, 'GET', '/v1/audit', { query: params }),
    /** Anyone signed in: the fleet's audit public keys, which verify a decision's `receipt` offline (save the answer as a file). */
    keys: (): Promise<AuditKeys> => this.call(this.apiUrl, 'GET', '/v1/audit/keys'),
  };

  private async call<T>(
    base: string,
    method: string,
    path: string,
    req: { body?: unknown; query?: Query; headers?: Record<string, string> } = {},
  ): Promise<T> {
    const query = Object.entries(req.query ?? {}).filter((e): e is [string, string | number] => e[1] !== undefined);
    const search = query.length ? `?${new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)]))}` : '';
    const res = await this.send(`${base}${path}${search}`, {
      method,
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...req.headers,
      },
      ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
    });
    if (!res.ok) throw await ReinApiError.from(res);
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** `fetch`, with a failure to get any answer as a `ReinNetworkError` naming the URL (an abort stays an abort). */
  private async send(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetch(url, init);
    } catch (err) {
      if (init.signal?.aborted || (err as Error | undefined)?.name === 'AbortError') throw err;
      throw new ReinNetworkError(url, err);
    }
  }

  private open(base: string, path: string, lastEventId: string | undefined, signal: AbortSignal): Promise<Response> {
    return this.send(`${base}${path}`, {
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        accept: 'text/event-stream',
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      },
      signal,
    });
  }
}

const enc = encodeURIComponent;
