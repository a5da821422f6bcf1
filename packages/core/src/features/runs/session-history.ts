import type { ChatMessage, Compensation } from '@rein/contract';
import { type RunRecord, TERMINAL_STATUSES } from '@rein/contract';
import { estimatePromptTokens } from '../../policy/budget/token-estimator.js';
import type { RunRepository } from '../../policy/ports/run-repository.js';
import type { SessionRegistry } from '../../policy/ports/session-registry.js';
import type { TurnJournal } from '../../policy/ports/turn-journal.js';

export interface SessionSettings {
  /** The most tokens earlier turns may take in a new run's prompt; older turns go first. */
  windowTokens: number;
  /** Carry the earlier runs' tool calls and results too, not only inputs and answers. */
  toolTraffic: boolean;
  /** Which tokenizer counts the window: the same estimate budgets use. */
  model: string;
}

/** What the next run reads where an interrupted turn's answer would be. */
export const INTERRUPTED_TURN = '[interrupted: the user wrote again before this was answered]';
/** A rolled-back turn whose undo failed: its writes may still stand. */
export const ROLLBACK_FAILED_TURN = '[rolled back when the user wrote again, but undoing its writes failed: they may still stand]';
/** A rolled-back turn whose undo an approver declined (or let expire): its writes stand. */
export const ROLLBACK_DECLINED_TURN = '[rolled back when the user wrote again, but undoing its writes was declined: they stand]';
/** A rolled-back turn whose undo is not over yet (a write that landed late is being undone). */
export const ROLLBACK_UNDOING_TURN = '[rolled back when the user wrote again; undoing its writes is not finished]';

/**
 * What a rolled-back turn's undo came to, as the mark the next run reads; null when the turn
 * leaves the history: its undo finished, or it had nothing to undo.
 */
export function rollbackMark(undo: Compensation | null): string | null {
  if (!undo || undo.status === 'done') return null;
  if (undo.status === 'failed') return ROLLBACK_FAILED_TURN;
  if (undo.status === 'declined') return ROLLBACK_DECLINED_TURN;
  return ROLLBACK_UNDOING_TURN;
}

/** One earlier run as conversation: its input and answer, or its whole exchange with tool traffic; an interrupted one says so. */
async function turnOf(
  store: Pick<TurnJournal, 'messages'>,
  run: RunRecord,
  toolTraffic: boolean,
  rollback: string | null,
): Promise<ChatMessage[]> {
  const mark: ChatMessage[] = run.interruption ? [{ role: 'assistant', content: rollback ?? INTERRUPTED_TURN }] : [];
  // A turn cut mid-step may end on tool calls without results: only its input goes with the mark.
  // An archived run's message log is gone with its keys: its turn is its input and answer.
  const log = toolTraffic && !run.interruption ? (await store.messages(run.id)).slice(run.historyMessages ?? 0) : [];
  if (log.length) return log;
  const answer: ChatMessage[] = run.finalAnswer !== undefined ? [{ role: 'assistant', content: run.finalAnswer }] : mark;
  return [{ role: 'user', content: run.input }, ...answer];
}

/**
 * The conversation a new run of a session starts with: the session's finished runs,
 * oldest first (one that ended still queued left out), keeping the newest turns that fit the
 * token window (a turn is kept whole or dropped whole, so a tool call never loses its
 * result). A rolled-back run's turn leaves only once its undo finished; while its writes
 * stand (the undo failed, was declined or is still going on) it stays, marked as such.
 * `byId`: where the run documents are read, `undoOf` their compensations (with the archive
 * on, also where Redis has none).
 */
export async function sessionHistory(
  store: Pick<RunRepository, 'getMany' | 'compensation'> & Pick<TurnJournal, 'messages'>,
  registry: Pick<SessionRegistry, 'sessionRunIds'>,
  session: { tenantId: string; userId: string; sessionId: string },
  settings: SessionSettings,
  byId: (ids: string[]) => Promise<Array<RunRecord | null>> = (ids) => store.getMany(ids),
  undoOf: (run: RunRecord) => Promise<Compensation | null> = (run) => store.compensation(run.id),
): Promise<ChatMessage[]> {
  const ids = await registry.sessionRunIds(session.tenantId, session.userId, session.sessionId);
  const finished = (await byId(ids)).filter((r): r is RunRecord => r !== null && TERMINAL_STATUSES.includes(r.status) && !r.queuedBehind);
  const marks = await Promise.all(finished.map(async (r) => (r.interruption?.rollback ? rollbackMark(await undoOf(r)) : null)));
  const runs = finished.flatMap((r, i) => (r.interruption?.rollback && !marks[i] ? [] : [{ run: r, mark: marks[i] ?? null }]));
  const turns = await Promise.all(runs.map(({ run, mark }) => turnOf(store, run, settings.toolTraffic, mark)));
  const kept: ChatMessage[][] = [];
  let tokens = 0;
  for (const turn of turns.reverse()) {
    tokens += estimatePromptTokens(settings.model, turn, []);
    if (tokens > settings.windowTokens) break;
    kept.unshift(turn);
  }
  return kept.flat();
}
