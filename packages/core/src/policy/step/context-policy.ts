import type { ChatMessage } from '@rein/contract';
import { type ContextPolicy, READ_RESULT_TOOL } from '@rein/define/internal';
import { toolMessageContent } from './tool-observation.js';

/** What an agent declares (the policy's schema, the built-in tool's name) lives with the definition API. */
export { type ContextPolicy, contextPolicySchema, READ_RESULT_TOOL } from '@rein/define/internal';

/** A result's handle: the step and the tool call that produced it, which find it in the run's step records. */
export const resultHandle = (step: number, toolCallId: string) => `${step}:${toolCallId}`;

export function parseHandle(handle: string): { step: number; toolCallId: string } | null {
  const m = /^(\d{1,6}):(.{1,128})$/.exec(handle);
  return m ? { step: Number(m[1]), toolCallId: m[2] as string } : null;
}

const SCALAR_CHARS = 120;

function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return `array(${value.length})`;
  if (value !== null && typeof value === 'object') return `object(${Object.keys(value).join(',')})`;
  if (typeof value === 'string' && value.length > SCALAR_CHARS) return `${value.slice(0, SCALAR_CHARS)}…(${value.length} chars)`;
  return value;
}

/** The key fields of a result: top-level scalars as they are, arrays and objects by their size and keys. */
export function structuredSummary(observation: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(observation);
  } catch {
    return { text: shapeOf(observation) };
  }
  if (Array.isArray(json)) {
    const first = json[0];
    return { length: json.length, ...(first && typeof first === 'object' ? { itemKeys: Object.keys(first) } : {}) };
  }
  if (json !== null && typeof json === 'object') {
    return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, shapeOf(v)]));
  }
  return { value: shapeOf(json) };
}

/**
 * A tool result as the model sees it. Under a context policy a result longer than its
 * limit becomes `{summarized, handle, chars, fields, hint}`; `read_result`'s own output
 * is never summarised again (the model asked for it), only cut at the global limit.
 */
export function observationContent(
  r: { id: string; name: string; observation: string },
  step: number,
  globalMaxChars: number,
  policy: ContextPolicy | undefined,
): string {
  if (!policy || r.name === READ_RESULT_TOOL || r.observation.length <= policy.toolResultMaxChars) {
    return toolMessageContent(r.name, r.observation, globalMaxChars);
  }
  const summary = {
    summarized: true,
    handle: resultHandle(step, r.id),
    chars: r.observation.length,
    fields: structuredSummary(r.observation),
    hint: `Only a summary. Call ${READ_RESULT_TOOL} with this handle for the full result, or with offset and length for a slice.`,
  };
  return toolMessageContent(r.name, JSON.stringify(summary), globalMaxChars);
}

const EXCERPT_CHARS = 200;

/** One line per call of a dropped turn: what was asked and the start of what came back. */
export function summariseTurns(turns: ChatMessage[]): string {
  const lines: string[] = [];
  const results = new Map(turns.flatMap((m) => (m.role === 'tool' ? [[m.tool_call_id, m.content] as const] : [])));
  for (const m of turns) {
    if (m.role !== 'assistant') continue;
    for (const c of m.tool_calls ?? []) {
      const result = results.get(c.id) ?? '';
      const excerpt = result.length > EXCERPT_CHARS ? `${result.slice(0, EXCERPT_CHARS)}…` : result;
      lines.push(`- ${c.function.name}(${c.function.arguments}) → ${excerpt.replaceAll('\n', ' ')}`);
    }
  }
  return `Summary of ${lines.length} earlier tool call(s) of this run (the full results are in the run's trace):\n${lines.join('\n')}`;
}

/** A compacted history: what is sent, the turns its summary message (at `summaryAt`) stands for. */
export interface Compaction {
  sent: ChatMessage[];
  dropped: ChatMessage[];
  summaryAt: number;
}

/**
 * The history as sent: when its estimate passes `historyTokens`, the oldest assistant
 * turns (each with its tool results, so no call is cut from its result) after the last
 * user message are replaced by one summary message, keeping at least the latest turn.
 * Null: it is sent as it is.
 */
export function compaction(
  history: ChatMessage[],
  policy: ContextPolicy | undefined,
  estimate: (messages: ChatMessage[]) => number,
): Compaction | null {
  if (!policy?.historyTokens || estimate(history) <= policy.historyTokens) return null;
  const start = history.findLastIndex((m) => m.role === 'user') + 1;
  const turnStarts = history.flatMap((m, i) => (i >= start && m.role === 'assistant' ? [i] : []));
  for (let cut = 1; cut < turnStarts.length; cut++) {
    const from = turnStarts[cut] as number;
    const dropped = history.slice(start, from);
    const summary: ChatMessage = { role: 'system', content: summariseTurns(dropped) };
    const sent = [...history.slice(0, start), summary, ...history.slice(from)];
    if (estimate(sent) <= policy.historyTokens || cut === turnStarts.length - 1) return { sent, dropped, summaryAt: start };
  }
  return null;
}

/** `compaction`'s history, or the history itself. */
export function compactHistory(
  history: ChatMessage[],
  policy: ContextPolicy | undefined,
  estimate: (messages: ChatMessage[]) => number,
): ChatMessage[] {
  return compaction(history, policy, estimate)?.sent ?? history;
}

/** The compacted history with the model's summary in place of the structured one. */
export function withModelSummary(c: Compaction, text: string): ChatMessage[] {
  const summary: ChatMessage = {
    role: 'system',
    content: `Summary of the earlier turns of this run, written by the model (the full results are in the run's trace):\n${text}`,
  };
  return c.sent.map((m, i) => (i === c.summaryAt ? summary : m));
}
