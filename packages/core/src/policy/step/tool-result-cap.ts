/**
 * Caps a tool result at `maxBytes` of UTF-8, keeping its head and saying that it was cut
 * and how big it was. Applied once, where the result is made: the journal, the trace,
 * the step record and the model all get this form, so one huge result cannot fill Redis
 * for the trace's lifetime.
 */
export function capToolResult(text: string, maxBytes: number): string {
  // A UTF-8 byte per character at least, at most three per UTF-16 unit: decide cheaply when it can be decided.
  if (text.length * 3 <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  const marker = (kept: number) => `\n…[tool result truncated: ${bytes.length} bytes, the first ${kept} kept]`;
  let end = Math.max(0, maxBytes - Buffer.byteLength(marker(maxBytes)));
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--; // never split a character
  return `${bytes.subarray(0, end).toString('utf8')}${marker(end)}`;
}
