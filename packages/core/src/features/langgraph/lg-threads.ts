import type { Principal } from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';
import type { z } from 'zod';
import { checkpointId } from '../../policy/langgraph/lg-shapes.js';
import { ConflictError } from '../../shared/errors.js';
import { type LangGraphServiceDeps, matches, NotServedError, type Opt, page } from './lg-common.js';
import type { historySchema, threadCreateSchema, threadSearchSchema } from './lg-schemas.js';
import type { ThreadReader } from './lg-thread-reader.js';
import { THREAD_SCAN_LIMIT } from './thread-store.js';

/** Threads are a user's sessions: created, copied, searched, updated, removed; their state and history are the session's runs' checkpoints. */
export function lgThreads(deps: LangGraphServiceDeps, reader: ThreadReader) {
  const { iso, thread, newThread, sessionRuns, threadPoints, threadView, stateAt } = reader;
  return {
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
  };
}
