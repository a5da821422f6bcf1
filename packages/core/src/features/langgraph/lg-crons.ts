import type { Principal, ScheduleView } from '@rein/contract';
import type { z } from 'zod';
import { inputText } from '../../policy/langgraph/lg-shapes.js';
import { InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import { given, type LangGraphServiceDeps, NotServedError, page } from './lg-common.js';
import type { cronCreateSchema, cronSearchSchema, cronUpdateSchema } from './lg-schemas.js';
import type { ThreadReader } from './lg-thread-reader.js';

/** Crons are schedules, on a thread (its session) or stateless. */
export function lgCrons(deps: LangGraphServiceDeps, thread: ThreadReader['thread']) {
  return {
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
  };
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
