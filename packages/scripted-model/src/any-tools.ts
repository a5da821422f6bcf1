import type { ScriptCall, ScriptMessage, ScriptReply } from './script.js';

/** A tool as the request offers it: name and JSON Schema of its arguments. */
export interface OfferedTool {
  name: string;
  parameters?: JsonSchema;
}

/** The parts of JSON Schema the generic rule honours when it makes up a value. */
interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** Values for the string formats a tool is likely to check. */
const FORMATS: Record<string, string> = {
  email: 'someone@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  date: '2024-01-01',
  'date-time': '2024-01-01T00:00:00Z',
  time: '00:00:00Z',
  uuid: '00000000-0000-4000-8000-000000000000',
};

/** Bounds on what a schema can make the server build: a tool's schema is input too. */
const MAX_LENGTH = 10_000;
const MAX_ITEMS = 100;

/** The quoted phrases of the input, in order; the input itself when there is none. */
function phrasesOf(input: string): string[] {
  const quoted = [...input.matchAll(/["“「'‘]([^"”」'’]+)["”」'’]/g)].map((m) => (m[1] as string).trim()).filter(Boolean);
  return quoted.length ? quoted : [input.trim() || 'scripted'];
}

function numberFor(schema: JsonSchema, integer: boolean): number {
  const step = integer ? 1 : 0.5;
  let low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + step : 1);
  if (integer)
    low = schema.exclusiveMinimum !== undefined && schema.minimum === undefined ? Math.floor(schema.exclusiveMinimum) + 1 : Math.ceil(low);
  const high = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - step : undefined);
  // 1 when the range allows it (a count, a page), else the nearest bound.
  const value = Math.max(low, Math.min(1, high ?? 1));
  return high !== undefined && value > high ? (integer ? Math.floor(high) : high) : value;
}

/** Makes string arguments from the input's quoted phrases, one phrase per argument in order. */
class ValueMaker {
  private next = 0;
  constructor(private readonly phrases: string[]) {}

  valueFor(schema: JsonSchema): unknown {
    if (schema.const !== undefined) return schema.const;
    if (schema.enum?.length) return schema.enum[0];
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const type = types.find((t) => t !== 'null') ?? (schema.properties ? 'object' : 'string');
    if (type === 'number' || type === 'integer') return numberFor(schema, type === 'integer');
    if (type === 'boolean') return true;
    if (type === 'array') {
      const count = Math.min(Math.max(schema.minItems ?? 1, 0), schema.maxItems ?? MAX_ITEMS, MAX_ITEMS);
      return Array.from({ length: count }, () => this.valueFor(schema.items ?? { type: 'string' }));
    }
    if (type === 'object') return this.requiredOf(schema);
    const text = (schema.format && FORMATS[schema.format]) || this.phrase();
    const padded = text.padEnd(Math.min(schema.minLength ?? 0, MAX_LENGTH), 'x');
    return schema.maxLength !== undefined ? padded.slice(0, schema.maxLength) : padded;
  }

  /** Only what the schema requires: an optional parameter changes what a real tool does (a file's head and tail at once). */
  requiredOf(schema: JsonSchema | undefined): Record<string, unknown> {
    const properties = schema?.properties ?? {};
    return Object.fromEntries(
      (schema?.required ?? [])
        .filter((name) => Object.hasOwn(properties, name))
        .map((name) => [name, this.valueFor(properties[name] ?? {})]),
    );
  }

  private phrase(): string {
    const phrase = this.phrases[Math.min(this.next, this.phrases.length - 1)] as string;
    this.next += 1;
    return phrase;
  }
}

/**
 * Arguments for the properties the schema requires, each fitting its schema (enum,
 * bounds, lengths, formats, minItems); strings take the input's quoted phrases in order
 * (the last one repeats), else the input itself.
 */
export function argumentsFor(tool: OfferedTool, input: string): Record<string, unknown> {
  return new ValueMaker(phrasesOf(input)).requiredOf(tool.parameters);
}

/**
 * Any app's agent, played from one rule: call each offered tool once, in the order
 * the agent lists them, one per turn, with its required arguments made from the input
 * (the quoted phrases for strings); then answer with what the last tool returned. It shows a
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
