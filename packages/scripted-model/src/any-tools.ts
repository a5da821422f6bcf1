import type { ScriptCall, ScriptMessage, ScriptReply } from './script.js';

/** A tool as the request offers it: name and JSON Schema of its arguments. */
export interface OfferedTool {
  name: string;
  parameters?: { properties?: Record<string, JsonSchema>; required?: string[] };
}

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  maxLength?: number;
  minimum?: number;
  items?: JsonSchema;
}

/** The text a string argument gets: the first quoted phrase of the input, else the input itself. */
function phraseOf(input: string): string {
  return /["“「'‘]([^"”」'’]+)["”」'’]/.exec(input)?.[1] ?? input;
}

function valueFor(schema: JsonSchema, input: string): unknown {
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'number' || type === 'integer') return schema.minimum !== undefined && schema.minimum > 1 ? schema.minimum : 1;
  if (type === 'boolean') return true;
  if (type === 'array') return [valueFor(schema.items ?? { type: 'string' }, input)];
  if (type === 'object') return {};
  if (schema.format === 'email') return 'someone@example.com';
  const text = phraseOf(input).trim() || 'scripted';
  return schema.maxLength ? text.slice(0, schema.maxLength) : text;
}

/** Arguments for every property the schema lists, made from the user's input. */
export function argumentsFor(tool: OfferedTool, input: string): Record<string, unknown> {
  const properties = tool.parameters?.properties ?? {};
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, valueFor(schema, input)]));
}

/**
 * Any app's agent, played from one rule: call each offered tool once, in the order
 * the agent lists them, one per turn, with arguments made from the input (the first
 * quoted phrase for strings); then answer with what the last tool returned. It shows a
 * user's own tools and approvals running on the fleet offline; it is no model, and
 * its answers say so.
 */
export function playAnyTools(messages: ScriptMessage[], tools: OfferedTool[]): ScriptReply {
  const input = messages.find((m) => m.role === 'user')?.content ?? '';
  const called = new Set(messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name)));
  const next = tools.find((t) => !called.has(t.name));
  if (next) {
    const call: ScriptCall = { name: next.name, arguments: argumentsFor(next, input) };
    return { content: `(scripted) Calling ${next.name}.`, toolCalls: [call] };
  }
  const last = [...messages].reverse().find((m) => m.role === 'tool')?.content ?? '';
  const result = /^<tool_result[^>]*>\n([\s\S]*)\n<\/tool_result>$/.exec(last)?.[1] ?? last;
  return {
    content: `(scripted reply, not an LLM) I called ${tools.map((t) => t.name).join(', ')}. The last result: ${result}`,
    toolCalls: [],
  };
}
