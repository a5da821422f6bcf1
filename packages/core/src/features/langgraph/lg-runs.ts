import type { Principal, RunView } from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';
import { lgRunStatus, NODES } from '../../policy/langgraph/lg-shapes.js';
import { eventParts, type LgStreamPart, type StreamMode } from '../../policy/langgraph/lg-stream.js';
import { awaitsDecision } from '../../policy/run/run-settled.js';
import { NotFoundError } from '../../shared/errors.js';
import { type LangGraphServiceDeps, NotServedError, page } from './lg-common.js';
import { createRunStarter } from './lg-run-start.js';
import type { ThreadReader } from './lg-thread-reader.js';

/** A run as the SDK's `Run`. */
export const lgRun = (run: RunView) => ({
  run_id: run.id,
  thread_id: run.sessionId ?? run.id,
  assistant_id: run.agent,
  created_at: run.createdAt,
  updated_at: run.updatedAt,
  status: lgRunStatus(run),
  metadata: run.metadata,
  multitask_strategy: null,
});

/** Runs are runs: started (or resumed), followed to where they settle, streamed as LangGraph parts, listed and cancelled on their thread. */
export function lgRuns(deps: LangGraphServiceDeps, reader: ThreadReader) {
  const { thread, sessionRuns, checkpointsOf, interruptsOf, threadPoints } = reader;
  const start = createRunStarter(deps, reader);

  /** A run of this thread, or 404 (a run of another thread, user or tenant looks missing). */
  async function runOfThread(principal: Principal, threadId: string, runId: string): Promise<RunView> {
    const record = await deps.runs.record(principal, runId);
    // Threads are the caller's own sessions: an overseer's read of another user's run is not a run of this thread.
    if (record.sessionId !== threadId || record.userId !== principal.userId) throw new NotFoundError(`run ${runId}`);
    return deps.runs.get(principal, runId);
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

  return {
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
  };
}
