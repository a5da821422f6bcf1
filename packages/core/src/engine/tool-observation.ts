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
 * How a tool result reaches the model: delimited as data, so text inside it cannot pass
 * for instructions. The system prompt says to treat the content as data only.
 */
export function toolMessageContent(name: string, observation: string, max: number): string {
  const body = truncateObservation(observation, max).replaceAll('</tool_result>', '<\\/tool_result>');
  return `<tool_result name="${name}">\n${body}\n</tool_result>`;
}
