import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { admitJobSchema, type Enqueue } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { SessionRegistry } from '../../policy/ports/session-registry.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';
import { admitQueuedRun } from '../../policy/run/run-transitions.js';
import { StaleStepError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { TransitionApplier } from '../../step/apply-transition.js';
import type { RunEndPlug } from '../run-end.js';
import { type SessionSettings, sessionHistory } from './session-history.js';

export interface SessionQueueDeps {
  store: RunRepository & TurnJournal;
  /** Who holds the session, and the runs queued behind it. */
  sessionRegistry: SessionRegistry;
  applier: Pick<TransitionApplier, 'apply'>;
  sessions: SessionSettings;
  /** Whether a rolled-back run's undo has finished or been declined (engine/compensation.ts). */
  undoSettled: (run: RunRecord) => Promise<boolean>;
  /** Whether the run still waits for a slot of its tenant (fair share): then that slot, not the session, starts it. */
  waitingForSlot: (run: RunRecord) => Promise<boolean>;
  logger: Logger;
  now?: () => number;
}

/** What one `admit` job came to. */
export type AdmitResult = 'admitted' | 'empty' | 'busy' | 'undoing' | 'no_session';

/**
 * Runs queued for a busy session (`ifBusy` enqueue, interrupt, rollback) start one at a
 * time, in submission order, when the session is free: the `admit` job takes the head of
 * the session's queue, claims the session for it (only the head may claim while runs
 * wait), gives it the session's history as it is by then and enqueues its first step.
 * Behind a rolled-back run it waits until that run's undo has finished or been declined.
 * Idempotent: a duplicate job finds the session taken or the queue moved on.
 */
export function createSessionQueue(deps: SessionQueueDeps) {
  const now = deps.now ?? Date.now;
  return {
    /** `runId`: a run of the session whose change may have freed it. */
    async admitNext(runId: string): Promise<AdmitResult> {
      const prompt = await deps.store.get(runId);
      if (!prompt?.sessionId) return 'no_session';
      const session = { tenantId: prompt.tenantId, userId: prompt.userId, sessionId: prompt.sessionId };
      // Bounded: each turn drops a head that no longer waits, or ends.
      for (let turn = 0; turn < 50; turn++) {
        const head = await deps.sessionRegistry.sessionQueueHead(session);
        if (!head) return 'empty';
        const next = await deps.store.get(head);
        if (!next?.queuedBehind || TERMINAL_STATUSES.includes(next.status)) {
          // Admitted already (a crash before it left the queue), or ended while waiting (cancel, deadline).
          await deps.sessionRegistry.leaveSessionQueue({ ...session, id: head });
          continue;
        }
        const behind = await deps.store.get(next.queuedBehind);
        if (behind?.interruption?.rollback && !(await deps.undoSettled(behind))) return 'undoing';
        if (await deps.sessionRegistry.claimSession(next)) return 'busy';
        const history = await sessionHistory(deps.store, deps.sessionRegistry, session, deps.sessions);
        const step = { name: 'step' as const, payload: { runId: next.id, step: 0, tenantId: next.tenantId } };
        try {
          await deps.applier.apply(next, {
            kind: 'admit',
            change: admitQueuedRun(next, history, now()),
            followUps: { jobs: (await deps.waitingForSlot(next)) ? [] : [step] },
          });
        } catch (err) {
          if (!(err instanceof StaleStepError)) throw err;
          continue; // cancelled meanwhile: look at it again
        }
        await deps.sessionRegistry.leaveSessionQueue(next);
        deps.logger.info({ runId: next.id, sessionId: session.sessionId, behind: next.queuedBehind }, 'queued run admitted');
        return 'admitted';
      }
      return 'busy';
    },
  };
}

export type SessionQueue = ReturnType<typeof createSessionQueue>;

/** A finished run's session may be free now: the next run queued for it (if any) starts. */
export const sessionPlug = (enqueue: Enqueue): RunEndPlug => ({
  feature: 'sessions',
  async finished(run) {
    if (run.sessionId) await enqueue('admit', { runId: run.id, cause: 'finished', traceparent: run.traceparent });
  },
});

/** The next run queued for a session starts. */
export const sessionJobs = (sessions: Pick<SessionQueue, 'admitNext'>): JobHandlers<'admit'> => ({
  admit: { schema: admitJobSchema, run: async ({ runId }) => `session ${await sessions.admitNext(runId)}` },
});
