import type { Principal, RunView, ScheduleView, SubmitRunBody } from '@rein/contract';
import { submitRunBodySchema, TERMINAL_STATUSES } from '@rein/contract';
import type { AgentCatalog, Tool } from '@rein/define/internal';
import type { z } from 'zod';
import type { StoredEvent } from '../../adapters/redis/run-store.js';
import type { SseSource } from '../../adapters/redis/stream-hub.js';
import { toolJsonSchema } from '../../policy/app/tool-digest.js';
import {
  checkpointId,
  inputText,
  type LgMessage,
  lgInterrupt,
  lgRunStatus,
  lgThreadStatus,
  NODES,
  runMessages,
  type StepMessages,
} from '../../policy/langgraph/lg-shapes.js';
import { eventParts, type LgStreamPart, type StreamMode } from '../../policy/langgraph/lg-stream.js';
import { awaitsDecision } from '../../policy/run/run-settled.js';
import { ConflictError, InvalidRequestError, NotFoundError, ReinError } from '../../shared/errors.js';
import type { PiiMasker } from '../../shared/guards/pii-masker.js';
import type { ApprovalService, Decision } from '../approvals/approval-service.js';
import type { RunService } from '../runs/run-service.js';
import type { ScheduleService } from '../schedules/schedule-service.js';
import {
  type assistantSearchSchema,
  type cronCreateSchema,
  type cronSearchSchema,
  type cronUpdateSchema,
  type historySchema,
  REFUSED_RUN_FIELDS,
  type ResumeDecision,
  type RunCreateBody,
  resumeSchema,
  SERVED_STREAM_MODES,
  type threadCreateSchema,
  type threadSearchSchema,
} from './lg-schemas.js';
import { THREAD_SCAN_LIMIT, type ThreadRecord, type ThreadStore } from './thread-store.js';

/** What Rein does not do through this door: 501 with a stable code and what to use instead. */
export class NotServedError extends ReinError {
  override readonly name = 'NotServedError';
  constructor(what: string, instead: string) {
    super('not_served', `${what} is not served by Rein's LangGraph API: ${instead}`, { status: 501 });
  }
}

/** Follows a run's event stream (the API's `EventStreams.follow`): batches as they come, an empty one on a quiet heartbeat. */
export type FollowEvents = (source: SseSource<StoredEvent>, fromId: string, signal: AbortSignal) => AsyncIterable<StoredEvent[]>;

export interface LangGraphServiceDeps {
  runs: RunService;
  approvals: Pick<ApprovalService, 'decide'>;
  agents: AgentCatalog;
  tools: Map<string, Tool>;
  threads: ThreadStore;
  schedules: Pick<ScheduleService, 'create' | 'list' | 'get' | 'patch' | 'remove'>;
  masker: PiiMasker;
  follow: FollowEvents;
  /** The app version runs start on: what an assistant's metadata names. */
  appVersion: string;
  now?: () => number;
}

type Opt<T> = T | null | undefined;
const given = <T>(v: Opt<T>): v is T => v !== null && v !== undefined;
const matches = (meta: Record<string, unknown>, filter: Opt<Record<string, unknown>>) =>
  !filter || Object.entries(filter).every(([k, v]) => JSON.stringify(meta[k]) === JSON.stringify(v));
const page = <T>(items: T[], q: { limit: number; offset: number }) => items.slice(q.offset, q.offset + q.limit);

/**
 * The LangGraph API over Rein: assistants are agents, threads are a user's sessions,
 * runs are runs, interrupts are pending approvals and a resume command decides them
 * through the approval service, crons are schedules. Every call goes through the run,
 * approval and schedule services with the caller's principal, so keys, tenants, quotas,
 * budgets, approval rights, masking and audit are the ones `POST /v1/runs` meets.
 */
export function createLangGraphService(deps: LangGraphServiceDeps) {
  const now = deps.now ?? Date.now;
  const iso = () => new Date(now()).toISOString();

  // ---- assistants ------------------------------------------------------------------

  function assistant(name: string) {
    if (!deps.agents.has(name)) throw new NotFoundError(`assistant ${name}`);
    const profile = deps.agents.get(name);
    const at = new Date(0).toISOString();
    return {
      assistant_id: profile.name,
      graph_id: profile.name,
      name: profile.name,
      ...(profile.description ? { description: profile.description } : {}),
      config: {},
      context: {},
      metadata: { rein_app_version: deps.appVersion, tools: [...profile.tools] },
      version: 1,
      created_at: at,
      updated_at: at,
    };
  }

  // ---- threads ---------------------------------------------------------------------

  async function thread(principal: Principal, threadId: string): Promise<ThreadRecord> {
    const found = await deps.threads.get(principal.tenantId, principal.userId, threadId);
    if (!found) throw new NotFoundError(`thread ${threadId}`);
    return found;
  }

  async function newThread(principal: Principal, threadId: string, metadata: Opt<Record<string, unknown>>): Promise<ThreadRecord | null> {
    const at = iso();
    const record: ThreadRecord = {
      schemaVersion: 1,
      threadId,
      tenantId: principal.tenantId,
      userId: principal.userId,
      metadata: metadata ?? {},
      createdAt: at,
      updatedAt: at,
    };
    return (await deps.threads.create(record)) ? record : null;
  }

  /** The session's runs, oldest first (none yet: empty). */
  async function sessionRuns(principal: Principal, threadId: string): Promise<RunView[]> {
    try {
      return (await deps.runs.session(principal, threadId)).runs;
    } catch (err) {
      if (err instanceof NotFoundError) return [];
      throw err;
    }
  }

  /** A run's checkpoints with their messages (masked like the run's answer). */
  async function checkpointsOf(principal: Principal, run: RunView): Promise<StepMessages[]> {
    // A run still queued behind its session has not taken its turn yet.
    if (run.queuedBehind) return [];
    const trace = await deps.runs.trace(principal, run.id);
    return deps.masker.maskDeep(runMessages(trace, run.pendingApprovals)) as StepMessages[];
  }

  const interruptsOf = (run: RunView | undefined) =>
    run && awaitsDecision(run) ? run.pendingApprovals.filter((a) => a.status === 'pending').map(lgInterrupt) : [];

  const taskId = (run: RunView) => checkpointId(run.id, run.pendingApprovals[0]?.step ?? run.step);

  /** A thread's state at checkpoint `upTo` of `points` (the latest by default), as the SDK's `ThreadState`. */
  function stateAt(threadId: string, points: StepMessages[], upTo: number, latest: RunView | undefined) {
    const point = points[upTo];
    const isHead = upTo === points.length - 1;
    const messages: LgMessage[] = points.slice(0, upTo + 1).flatMap((p) => p.messages);
    const cp = (p: StepMessages | undefined) =>
      p ? { thread_id: threadId, checkpoint_ns: '', checkpoint_id: checkpointId(p.runId, p.step), checkpoint_map: null } : null;
    const interrupts = isHead ? interruptsOf(latest) : [];
    const live = isHead && latest !== undefined && !TERMINAL_STATUSES.includes(latest.status);
    return {
      values: { messages },
      next: interrupts.length ? [NODES.tools] : live ? [NODES.agent] : [],
      checkpoint: cp(point) ?? { thread_id: threadId, checkpoint_ns: '', checkpoint_id: null, checkpoint_map: null },
      metadata: point ? { source: 'loop', step: upTo, run_id: point.runId } : { source: 'input', step: -1 },
      created_at: isHead ? (latest?.updatedAt ?? null) : null,
      parent_checkpoint: cp(points[upTo - 1]),
      tasks:
        interrupts.length && latest
          ? [{ id: taskId(latest), name: NODES.tools, error: null, interrupts, checkpoint: null, state: null }]
          : [],
    };
  }

  async function threadPoints(principal: Principal, threadId: string) {
    const runs = await sessionRuns(principal, threadId);
    const points = (await Promise.all(runs.map((r) => checkpointsOf(principal, r)))).flat();
    return { runs, points, latest: runs[runs.length - 1] };
  }

  async function threadView(principal: Principal, record: ThreadRecord, withValues: boolean) {
    const { runs, points, latest } = withValues
      ? await threadPoints(principal, record.threadId)
      : { runs: await sessionRuns(principal, record.threadId), points: [] as StepMessages[], latest: undefined };
    const last = latest ?? runs[runs.length - 1];
    const interrupts = interruptsOf(last);
    return {
      thread_id: record.threadId,
      created_at: record.createdAt,
      updated_at: last && last.updatedAt > record.updatedAt ? last.updatedAt : record.updatedAt,
      state_updated_at: last?.updatedAt ?? record.updatedAt,
      metadata: record.metadata,
      status: lgThreadStatus(last),
      values: withValues ? { messages: points.flatMap((p) => p.messages) } : {},
      interrupts: last && interrupts.length ? { [taskId(last)]: interrupts } : {},
      ...(last?.status === 'failed' ? { error: last.reason ?? 'failed' } : {}),
    };
  }

  // ---- runs ------------------------------------------------------------------------

  const lgRun = (run: RunView) => ({
    run_id: run.id,
    thread_id: run.sessionId ?? run.id,
    assistant_id: run.agent,
    created_at: run.createdAt,
    updated_at: run.updatedAt,
    status: lgRunStatus(run),
    metadata: run.metadata,
    multitask_strategy: null,
  });

  /** A run of this thread, or 404 (a run of another thread, user or tenant looks missing). */
  async function runOfThread(principal: Principal, threadId: string, runId: string): Promise<RunView> {
    const record = await deps.runs.record(principal, runId);
    // Threads are the caller's own sessions: an overseer's read of another user's run is not a run of this thread.
    if (record.sessionId !== threadId || record.userId !== principal.userId) throw new NotFoundError(`run ${runId}`);
    return deps.runs.get(principal, runId);
  }

  function refuseUnserved(body: RunCreateBody) {
    for (const field of REFUSED_RUN_FIELDS)
      if (body[field] !== undefined && body[field] !== null) throw new NotServedError(`"${field}"`, 'see docs/langgraph-sdk.md');
    const unknown = (body.stream_mode ?? []).filter((m) => !SERVED_STREAM_MODES.includes(m));
    if (unknown.length)
      throw new InvalidRequestError(
        `stream_mode ${unknown.join(', ')} is not served; use ${SERVED_STREAM_MODES.join(', ')}`,
        'stream_mode_unsupported',
      );
  }

  /** The approvals a resume decides: one decision for the only pending approval, or a map naming each. */
  function decisionsOf(resume: unknown, pending: string[]): Array<[string, ResumeDecision]> {
    const parsed = resumeSchema.safeParse(resume);
    if (!parsed.success)
      throw new InvalidRequestError(
        'command.resume is {approved, arguments?, reason?} or a map of approval id → that decision',
        'invalid_resume',
      );
    const value = parsed.data;
    if (typeof value.approved === 'boolean') {
      if (pending.length !== 1)
        throw new InvalidRequestError(
          `${pending.length} approvals are pending (${pending.join(', ')}): resume with a map of approval id → decision`,
          'invalid_resume',
        );
      return [[pending[0] as string, value as ResumeDecision]];
    }
    return Object.entries(value as Record<string, ResumeDecision>);
  }

  const decision = (d: ResumeDecision): Decision =>
    d.approved
      ? { kind: 'approve', ...(d.arguments ? { arguments: d.arguments } : {}), ...(d.reason ? { comment: d.reason } : {}) }
      : { kind: 'reject', reason: d.reason ?? 'rejected' };

  /** The id of the run's newest event now: a resume is followed from there. */
  async function lastEventId(principal: Principal, runId: string): Promise<string> {
    const entries = await (await deps.runs.events(principal, runId)).read('0');
    return entries[entries.length - 1]?.id ?? '0';
  }

  /**
   * `command: {resume}` decides the thread's pending approvals with the caller's rights
   * (the approval service re-polices edits and checks who may decide); `goto` and `update`
   * would steer the run past its rules and are refused.
   */
  async function resume(principal: Principal, threadId: string, command: NonNullable<RunCreateBody['command']>) {
    if (command.goto !== undefined || command.update !== undefined)
      throw new InvalidRequestError(
        'command.goto and command.update would move a run past its rules; Rein resumes a run only by deciding its approvals (command.resume)',
        'command_refused',
      );
    if (command.resume === undefined) throw new InvalidRequestError('command needs resume', 'invalid_resume');
    const runs = await sessionRuns(principal, threadId);
    const parked = [...runs].reverse().find(awaitsDecision);
    if (!parked) throw new ConflictError('nothing_to_resume', `thread ${threadId} has no run waiting for a decision`);
    const pending = parked.pendingApprovals.filter((a) => a.status === 'pending').map((a) => a.id);
    const decisions = decisionsOf(command.resume, pending);
    for (const [id] of decisions)
      if (!pending.includes(id)) throw new InvalidRequestError(`approval ${id} is not pending on thread ${threadId}`, 'invalid_resume');
    const from = await lastEventId(principal, parked.id);
    for (const [id, d] of decisions) await deps.approvals.decide(principal, id, decision(d));
    return { run: await deps.runs.get(principal, parked.id), from };
  }

  /**
   * Starts a run (or resumes the thread's parked one): what `runs.create`, `wait` and
   * `stream` share. `from`: the event id the run is followed from.
   */
  async function start(
    principal: Principal,
    threadId: string | null,
    body: RunCreateBody,
    idempotencyKey?: string,
  ): Promise<{ run: RunView; from: string }> {
    refuseUnserved(body);
    if (!deps.agents.has(body.assistant_id)) throw new NotFoundError(`assistant ${body.assistant_id}`);
    if (threadId !== null) {
      const exists = await deps.threads.get(principal.tenantId, principal.userId, threadId);
      if (!exists) {
        if (body.if_not_exists !== 'create') throw new NotFoundError(`thread ${threadId}`);
        await newThread(principal, threadId, {});
      }
    }
    if (body.command) {
      if (threadId === null) throw new InvalidRequestError('a resume command needs a thread', 'invalid_resume');
      if (body.input !== undefined && body.input !== null)
        throw new InvalidRequestError('send input or command, not both', 'invalid_resume');
      return resume(principal, threadId, body.command);
    }
    const text = inputText(body.input);
    if (text === undefined) throw new InvalidRequestError('input needs a human message ({messages: [{role: "user", content}]})');
    const submit: SubmitRunBody = submitRunBodySchema.parse({
      agent: body.assistant_id,
      input: text,
      ...(threadId !== null ? { sessionId: threadId } : {}),
      ...(body.metadata ? { metadata: body.metadata } : {}),
      ...(body.multitask_strategy ? { ifBusy: body.multitask_strategy } : {}),
    });
    const { run } = await deps.runs.submit(principal, submit, idempotencyKey);
    if (threadId !== null) {
      const record = await deps.threads.get(principal.tenantId, principal.userId, threadId);
      if (record) await deps.threads.put({ ...record, updatedAt: iso() });
    }
    return { run, from: '0' };
  }

  /** A run's events from `from` until it finishes or parks (a parked run's stream ends: its resume is a new request). */
  async function* untilSettled(principal: Principal, runId: string, from: string, signal: AbortSignal) {
    for await (const batch of deps.follow(await deps.runs.events(principal, runId), from, signal)) {
      // An empty batch is a quiet heartbeat: `null` lets the stream write a keep-alive.
      for (const entry of batch.length > 0 ? batch : [null]) {
        yield entry;
        const parked = entry?.event.type === 'step.finished' && entry.event.runId === runId && entry.event.data.outcome === 'parked';
        // A park read back from history may have been decided since: only a run waiting on a person now ends here.
        if (parked && awaitsDecision(await deps.runs.get(principal, runId))) return;
      }
    }
  }

  /** What a run leaves behind, as `runs.wait` answers: the thread's values (the run's own, stateless), its interrupts, its error. */
  async function settledValues(principal: Principal, run: RunView) {
    const fresh = await deps.runs.get(principal, run.id);
    const points = run.sessionId ? (await threadPoints(principal, run.sessionId)).points : await checkpointsOf(principal, fresh);
    const interrupts = interruptsOf(fresh);
    return {
      messages: points.flatMap((p) => p.messages),
      ...(interrupts.length ? { __interrupt__: interrupts } : {}),
      ...(fresh.status === 'failed'
        ? { __error__: { error: fresh.reason ?? 'failed', message: `run ${fresh.id} failed: ${fresh.reason ?? 'unknown'}` } }
        : {}),
    };
  }

  /** The run's messages of one step, as an `updates` part per node. */
  async function stepUpdates(principal: Principal, run: RunView, step: number): Promise<LgStreamPart[]> {
    const fresh = await deps.runs.get(principal, run.id);
    const point = (await checkpointsOf(principal, fresh)).find((p) => p.step === step);
    if (!point) return [];
    const ai = point.messages.filter((m) => m.type === 'ai');
    const tools = point.messages.filter((m) => m.type === 'tool');
    return [
      ...(ai.length ? [{ event: 'updates', data: { [NODES.agent]: { messages: ai } } }] : []),
      ...(tools.length ? [{ event: 'updates', data: { [NODES.tools]: { messages: tools } } }] : []),
    ];
  }

  const service = {
    assistants: {
      search(q: z.infer<typeof assistantSearchSchema>) {
        const all = deps.agents
          .names()
          .map(assistant)
          .filter((a) => (!given(q.graph_id) || a.graph_id === q.graph_id) && (!given(q.name) || a.name === q.name))
          .filter((a) => matches(a.metadata, q.metadata));
        return page(all, q);
      },
      get: assistant,
      graph(name: string) {
        const profile = deps.agents.get(assistant(name).graph_id);
        return {
          nodes: [
            { id: '__start__', name: '__start__' },
            { id: NODES.agent, name: NODES.agent, data: { model: profile.models?.[0] ?? null } },
            { id: NODES.tools, name: NODES.tools, data: { tools: [...profile.tools] } },
            { id: '__end__', name: '__end__' },
          ],
          edges: [
            { source: '__start__', target: NODES.agent },
            { source: NODES.agent, target: NODES.tools, conditional: true },
            { source: NODES.tools, target: NODES.agent },
            { source: NODES.agent, target: '__end__', conditional: true },
          ],
        };
      },
      /** Input is a human message; state and output are messages (and the agent's declared output); the tools' schemas are the config. */
      schemas(name: string) {
        const profile = deps.agents.get(assistant(name).graph_id);
        const messages = {
          type: 'object' as const,
          properties: { messages: { type: 'array' as const, items: { type: 'object' as const } } },
        };
        const tools = Object.fromEntries(
          profile.tools.flatMap((t) => {
            const tool = deps.tools.get(t);
            return tool ? [[t, toolJsonSchema(tool)]] : [];
          }),
        );
        return {
          graph_id: profile.name,
          input_schema: { ...messages, required: ['messages'] },
          output_schema: profile.output ? profile.output.jsonSchema.schema : messages,
          state_schema: messages,
          config_schema: { type: 'object' as const, properties: {}, 'x-rein-tools': tools },
          context_schema: null,
        };
      },
    },

    threads: {
      async create(principal: Principal, body: z.infer<typeof threadCreateSchema>) {
        if (body.supersteps !== undefined) throw new NotServedError('"supersteps"', 'a thread’s history is the runs that ran on it');
        const id = body.thread_id ?? crypto.randomUUID();
        const created = await newThread(principal, id, body.metadata);
        if (created) return threadView(principal, created, false);
        if (body.if_exists === 'do_nothing') return threadView(principal, await thread(principal, id), false);
        throw new ConflictError('thread_exists', `thread ${id} already exists`);
      },
      async get(principal: Principal, threadId: string) {
        return threadView(principal, await thread(principal, threadId), true);
      },
      /** A new thread with the same metadata and history (its session's runs): it goes on apart from the original. */
      async copy(principal: Principal, threadId: string) {
        const source = await thread(principal, threadId);
        const id = crypto.randomUUID();
        // A thread with no run yet copies as an empty thread; one with runs shares them.
        const hasRuns = (await sessionRuns(principal, threadId)).length > 0;
        if (hasRuns) await deps.runs.copySession(principal, threadId, id);
        const created = await newThread(principal, id, source.metadata);
        if (!created) throw new ConflictError('thread_exists', `thread ${id} already exists`);
        return threadView(principal, created, true);
      },
      async search(principal: Principal, q: z.infer<typeof threadSearchSchema>) {
        const records = (await deps.threads.recent(principal.tenantId, principal.userId, THREAD_SCAN_LIMIT)).filter(
          (t) => matches(t.metadata, q.metadata) && (!q.ids || q.ids.includes(t.threadId)),
        );
        const views = await Promise.all(records.map((r) => threadView(principal, r, false)));
        const filtered = views.filter((v) => !q.status || v.status === q.status);
        const key = q.sort_by ?? 'updated_at';
        const dir = q.sort_order === 'asc' ? 1 : -1;
        filtered.sort((a, b) => dir * String(a[key]).localeCompare(String(b[key])));
        return page(filtered, q);
      },
      async update(principal: Principal, threadId: string, metadata: Opt<Record<string, unknown>>) {
        const record = await thread(principal, threadId);
        const next = { ...record, metadata: { ...record.metadata, ...metadata }, updatedAt: iso() };
        await deps.threads.put(next);
        return threadView(principal, next, false);
      },
      /** The thread goes (its live run is cancelled); its runs stay in Rein's history and audit. */
      async remove(principal: Principal, threadId: string) {
        await thread(principal, threadId);
        const live = (await sessionRuns(principal, threadId)).filter((r) => !TERMINAL_STATUSES.includes(r.status));
        for (const r of live)
          await deps.runs.cancel(principal, r.id).catch((err) => {
            if (!(err instanceof ConflictError)) throw err;
          });
        await deps.threads.remove(principal.tenantId, principal.userId, threadId);
      },
      async state(principal: Principal, threadId: string) {
        await thread(principal, threadId);
        const { points, latest } = await threadPoints(principal, threadId);
        return stateAt(threadId, points, points.length - 1, latest);
      },
      /** One checkpoint per committed step (and per run's input), newest first. */
      async history(principal: Principal, threadId: string, q: z.infer<typeof historySchema>) {
        await thread(principal, threadId);
        const { points, latest } = await threadPoints(principal, threadId);
        const indexOf = (id: string | undefined) => (id ? points.findIndex((p) => checkpointId(p.runId, p.step) === id) : -1);
        const at = q.checkpoint ?? undefined;
        let end = points.length - 1;
        if (at !== undefined) end = indexOf(at);
        const before = q.before ?? undefined;
        if (before !== undefined) end = Math.min(end, indexOf(before) - 1);
        const states = [];
        for (let i = end; i >= 0 && states.length < q.limit; i--) states.push(stateAt(threadId, points, i, latest));
        return at !== undefined ? states.slice(0, 1) : states;
      },
    },

    runs: {
      start,
      lgRun,
      settledValues,
      stepUpdates,
      /** Follows a run to where `wait` and `join` answer: finished, or parked for a decision. */
      async settle(principal: Principal, run: RunView, from: string, signal: AbortSignal) {
        for await (const _ of untilSettled(principal, run.id, from, signal)) {
          // Only the end matters here.
        }
        return settledValues(principal, run);
      },
      /**
       * A run as LangGraph stream parts (already masked): metadata, the token-level modes
       * per event, `updates` and `values` per committed step, the interrupts of a park, an
       * error for a failed run. `null`: a quiet interval (write a keep-alive).
       */
      async *parts(
        principal: Principal,
        run: RunView,
        modes: ReadonlySet<StreamMode>,
        from: string,
        signal: AbortSignal,
      ): AsyncGenerator<(LgStreamPart & { id?: string }) | null> {
        const ids = { runId: run.id, threadId: run.sessionId ?? null, assistantId: run.agent };
        yield { event: 'metadata', data: { run_id: run.id, thread_id: run.sessionId ?? run.id, attempt: 1 } };
        for await (const entry of untilSettled(principal, run.id, from, signal)) {
          if (!entry) {
            yield null;
            continue;
          }
          if (entry.event.runId !== run.id) continue; // a sub-agent's copy
          for (const part of eventParts(entry.event, modes, ids)) yield { ...part, id: entry.id };
          if (entry.event.type === 'step.finished' && entry.event.step !== undefined) {
            if (modes.has('updates')) for (const part of await stepUpdates(principal, run, entry.event.step)) yield part;
          }
        }
        const values = await settledValues(principal, run);
        const {
          __interrupt__: interrupts,
          __error__: error,
          ...state
        } = values as typeof values & {
          __interrupt__?: unknown;
          __error__?: { error: string; message: string };
        };
        if (modes.has('values')) yield { event: 'values', data: interrupts ? { ...state, __interrupt__: interrupts } : state };
        if (modes.has('updates') && interrupts) yield { event: 'updates', data: { __interrupt__: interrupts } };
        if (error) yield { event: 'error', data: error };
      },
      async get(principal: Principal, threadId: string, runId: string) {
        await thread(principal, threadId);
        return lgRun(await runOfThread(principal, threadId, runId));
      },
      view: runOfThread,
      async list(principal: Principal, threadId: string, q: { limit: number; offset: number; status?: string | undefined }) {
        await thread(principal, threadId);
        const runs = (await sessionRuns(principal, threadId)).reverse().map(lgRun);
        return page(
          runs.filter((r) => !q.status || r.status === q.status),
          q,
        );
      },
      async cancel(principal: Principal, threadId: string, runId: string, action: 'interrupt' | 'rollback') {
        if (action === 'rollback')
          throw new NotServedError(
            'cancel with action "rollback"',
            'cancel, then POST /v1/runs/:id/compensate (approvers) to undo its writes',
          );
        await thread(principal, threadId);
        await runOfThread(principal, threadId, runId);
        return deps.runs.cancel(principal, runId);
      },
      /** `on_disconnect: cancel`: the client left before the run settled; a run already ended is left as it is. */
      cancelOnDisconnect(principal: Principal, runId: string): void {
        deps.runs.cancel(principal, runId).catch(() => {});
      },
      /** The run a thread's stream follows: its live one, else its latest. */
      async current(principal: Principal, threadId: string): Promise<RunView> {
        await thread(principal, threadId);
        const runs = await sessionRuns(principal, threadId);
        const live = runs.find((r) => !TERMINAL_STATUSES.includes(r.status) && !r.queuedBehind) ?? runs[runs.length - 1];
        if (!live) throw new NotFoundError(`a run on thread ${threadId}`);
        return live;
      },
    },

    crons: {
      /** A thread's cron fires into the thread (its session, queued behind a run still in it); a stateless one, runs of their own. */
      async create(principal: Principal, threadId: string | null, body: z.infer<typeof cronCreateSchema>) {
        if (threadId !== null) await thread(principal, threadId); // 404 for a thread not the caller's
        for (const field of ['end_time', 'interrupt_before', 'interrupt_after', 'webhook'] as const)
          if (body[field] !== undefined && body[field] !== null)
            throw new NotServedError(`"${field}" on a cron`, 'see docs/langgraph-sdk.md');
        if (!deps.agents.has(body.assistant_id)) throw new NotFoundError(`assistant ${body.assistant_id}`);
        const text = inputText(body.input);
        if (text === undefined) throw new InvalidRequestError('a cron needs an input with a human message');
        const schedule = await deps.schedules.create(principal, {
          agent: body.assistant_id,
          input: text,
          cron: body.schedule,
          timezone: body.timezone ?? 'UTC',
          overlap: 'skip',
          catchUp: 'none',
          ...(body.metadata ? { metadata: body.metadata } : {}),
          enabled: body.enabled ?? true,
          ...(threadId !== null ? { sessionId: threadId } : {}),
        });
        return lgCron(schedule);
      },
      async search(principal: Principal, q: z.infer<typeof cronSearchSchema>) {
        const { schedules } = await deps.schedules.list(principal);
        return page(
          schedules
            .filter(
              (s) =>
                (!given(q.assistant_id) || s.agent === q.assistant_id) &&
                (!given(q.enabled) || s.enabled === q.enabled) &&
                (!given(q.thread_id) || s.sessionId === q.thread_id),
            )
            .map(lgCron),
          q,
        );
      },
      async update(principal: Principal, id: string, body: z.infer<typeof cronUpdateSchema>) {
        const text = body.input === undefined ? undefined : inputText(body.input);
        if (body.input !== undefined && text === undefined) throw new InvalidRequestError('a cron needs an input with a human message');
        const patch = {
          ...(given(body.schedule) ? { cron: body.schedule } : {}),
          ...(given(body.timezone) ? { timezone: body.timezone } : {}),
          ...(given(body.enabled) ? { enabled: body.enabled } : {}),
          ...(text !== undefined ? { input: text } : {}),
        };
        if (Object.keys(patch).length === 0) return lgCron(await deps.schedules.get(principal, id));
        return lgCron(await deps.schedules.patch(principal, id, patch));
      },
      remove: (principal: Principal, id: string) => deps.schedules.remove(principal, id),
    },
  };
  return service;
}

/** A schedule as the SDK's `Cron`: on its thread (the schedule's session) or stateless, its payload the input it submits. */
function lgCron(s: ScheduleView) {
  return {
    cron_id: s.id,
    assistant_id: s.agent,
    thread_id: s.sessionId ?? null,
    end_time: null,
    schedule: s.cron,
    timezone: s.timezone,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    payload: { input: { messages: [{ role: 'user', content: s.input }] } },
    user_id: s.userId,
    next_run_date: s.nextRunAt,
    metadata: s.metadata,
    enabled: s.enabled,
  };
}

export type LangGraphService = ReturnType<typeof createLangGraphService>;
