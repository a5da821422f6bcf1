import type { Principal, RunView } from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';
import {
  checkpointId,
  type LgMessage,
  lgInterrupt,
  lgThreadStatus,
  NODES,
  runMessages,
  type StepMessages,
} from '../../policy/langgraph/lg-shapes.js';
import { awaitsDecision } from '../../policy/run/run-settled.js';
import { NotFoundError } from '../../shared/errors.js';
import type { LangGraphServiceDeps, Opt } from './lg-common.js';
import type { ThreadRecord } from './thread-store.js';

/** What the thread, run and cron parts of the door read a thread by: its record, its session's runs, its checkpoints and state. */
export function createThreadReader(deps: LangGraphServiceDeps) {
  const now = deps.now ?? Date.now;
  const iso = () => new Date(now()).toISOString();

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

  return { iso, thread, newThread, sessionRuns, checkpointsOf, interruptsOf, taskId, stateAt, threadPoints, threadView };
}

export type ThreadReader = ReturnType<typeof createThreadReader>;
