import { estimatePromptTokens } from '../budgets/token-estimator.js';
import type { ChatMessage } from '../schemas/message.js';
import { type RunRecord, TERMINAL_STATUSES } from '../schemas/run.js';
import type { RunStore } from '../store/run-store.js';

export interface SessionSettings {
  /** The most tokens earlier turns may take in a new run's prompt; older turns go first. */
  windowTokens: number;
  /** Carry the earlier runs' tool calls and results too, not only inputs and answers. */
  toolTraffic: boolean;
  /** Which tokenizer counts the window: the same estimate budgets use. */
  model: string;
}

/** One earlier run as conversation: its input and answer, or its whole exchange with tool traffic. */
async function turnOf(store: RunStore, run: RunRecord, toolTraffic: boolean): Promise<ChatMessage[]> {
  // An archived run's message log is gone with its keys: its turn is its input and answer.
  const log = toolTraffic ? (await store.messages(run.id)).slice(run.historyMessages ?? 0) : [];
  if (log.length) return log;
  const answer: ChatMessage[] = run.finalAnswer !== undefined ? [{ role: 'assistant', content: run.finalAnswer }] : [];
  return [{ role: 'user', content: run.input }, ...answer];
}

/**
 * The conversation a new run of a session starts with: the session's finished runs,
 * oldest first, keeping the newest turns that fit the token window (a turn is kept
 * whole or dropped whole, so a tool call never loses its result). `byId`: where the run
 * documents are read (with the archive on, also where Redis has none).
 */
export async function sessionHistory(
  store: RunStore,
  session: { tenantId: string; userId: string; sessionId: string },
  settings: SessionSettings,
  byId: (ids: string[]) => Promise<Array<RunRecord | null>> = (ids) => store.getMany(ids),
): Promise<ChatMessage[]> {
  const ids = await store.sessionRunIds(session.tenantId, session.userId, session.sessionId);
  const runs = (await byId(ids)).filter((r): r is RunRecord => r !== null && TERMINAL_STATUSES.includes(r.status));
  const turns = await Promise.all(runs.map((r) => turnOf(store, r, settings.toolTraffic)));
  const kept: ChatMessage[][] = [];
  let tokens = 0;
  for (const turn of turns.reverse()) {
    tokens += estimatePromptTokens(settings.model, turn, []);
    if (tokens > settings.windowTokens) break;
    kept.unshift(turn);
  }
  return kept.flat();
}
