import type { ChatMessage, JournaledSummary, RunRecord } from '@rein/contract';
import type { ModelGateway } from '../adapters/model/model-gateway.js';
import type { DecisionJournal } from '../adapters/redis/decision-journal.js';
import { auditUsage } from '../policy/budget/usage-audit.js';
import { summariseTurns } from '../policy/step/context-policy.js';
import { completionRoom } from '../policy/step/step-policy.js';

/** The most a model-written summary may take; a summary longer than the turns it replaces would defeat its purpose. */
export const SUMMARY_MAX_TOKENS = 512;

const INSTRUCTIONS =
  'You summarise the earlier turns of an agent run for the agent itself, which will go on from them. ' +
  'Keep every fact it still needs: ids, amounts, what each tool returned, what was decided and what is left to do. ' +
  'Plain text, a few short paragraphs at most. Never add a fact that is not in the turns.';

export interface ModelSummaryDeps {
  model: ModelGateway;
  journal: DecisionJournal;
  /** The prompt-token estimate of a request's messages. */
  estimate: (messages: ChatMessage[]) => number;
  now: () => number;
}

/**
 * The model's summary of `turns` for the run's current step: the journaled one when this
 * step asked already (a retry pays nothing again), else one call made now and journaled
 * before the step's own call. It is bounded by what the run's token budget has left; null
 * when nothing is left for it (the structured summary stands in, and the budget decides).
 */
export async function modelSummary(
  deps: ModelSummaryDeps,
  run: RunRecord,
  turns: ChatMessage[],
  request: { timeoutMs: number; deadlineBound: boolean; models?: readonly string[] },
): Promise<JournaledSummary | null> {
  const journaled = await deps.journal.summary(run.id, run.step);
  if (journaled) return journaled;
  const messages: ChatMessage[] = [
    { role: 'system', content: INSTRUCTIONS },
    { role: 'user', content: summariseTurns(turns) },
  ];
  const maxTokens = completionRoom(run, SUMMARY_MAX_TOKENS, deps.estimate(messages));
  if (maxTokens === null) return null;
  const reply = await deps.model.complete({
    messages,
    tools: [],
    maxTokens,
    timeoutMs: request.timeoutMs,
    deadlineBound: request.deadlineBound,
    ...(request.models ? { models: request.models } : {}),
  });
  return deps.journal.recordSummary(run.id, {
    schemaVersion: 1,
    step: run.step,
    model: reply.model,
    text: reply.content ?? '',
    usage: auditUsage(reply.usage, reply).usage,
    createdAt: new Date(deps.now()).toISOString(),
  });
}
