import { thrownMessage } from '@rein/define/internal';

/** Cuts a long tool result to `max` characters, keeping head and tail and saying how much went. */
export function truncateObservation(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = (cut: number) => `\n…[${cut} characters cut; the full result is in the run's trace]…\n`;
  const keep = max - marker(text.length).length;
  const head = Math.ceil(keep * 0.7);
  const tail = keep - head;
  return `${text.slice(0, head)}${marker(text.length - head - tail)}${text.slice(text.length - tail)}`;
}

/**
 * Every `<` of a tool result (and its full-width and small forms) as `&lt;`: no text
 * inside the envelope can open or close a tag, so it can forge neither another
 * `<tool_result>` nor a `<system>` block. Plain comparisons stay readable (`a &lt; b`).
 */
export function escapeMarkup(text: string): string {
  return text.replace(/[<\uFE64\uFF1C]/g, '&lt;');
}

/**
 * How a tool result reaches the model: delimited as data, so text inside it cannot pass
 * for instructions. The system prompt says to treat the content as data only.
 */
export function toolMessageContent(name: string, observation: string, max: number): string {
  return `<tool_result name="${name}">\n${truncateObservation(escapeMarkup(observation), max)}\n</tool_result>`;
}

/** A failed call as the model sees it: the stable code and whether trying again can help (ToolError's `retryable`). */
export function errorObservation(err: unknown): string {
  const { code, retryable } = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; retryable?: unknown };
  return JSON.stringify({
    error: typeof code === 'string' ? code : 'tool_failed',
    message: thrownMessage(err),
    retryable: retryable === true,
  });
}
