/** A JSON Schema as far as the scripted model reads one. */
interface Schema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema;
}

/** Asks for one invalid answer (then a valid one after the repair turn), or for invalid answers only. */
export const INVALID_ONCE = '[invalid-output]';
export const INVALID_ALWAYS = '[invalid-output-always]';

/** A value of the schema's shape: strings say the rules' answer, numbers are 1, the first enum member wins. */
function sampleOf(schema: Schema, text: string): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, sampleOf(v, text)]));
    case 'array':
      return schema.items ? [sampleOf(schema.items, text)] : [];
    case 'string':
      return text;
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

/**
 * The final answer under `response_format` json_schema: JSON of the schema's shape, or
 * (when the conversation asks for it with a marker) the plain text, which no schema of
 * an object accepts, so tests can watch the repair turn and `output_invalid`.
 */
export function structuredAnswer(schema: Schema, text: string, userTexts: string[]): string {
  const last = userTexts.at(-1) ?? '';
  if (userTexts.some((t) => t.includes(INVALID_ALWAYS)) || last.includes(INVALID_ONCE)) return text;
  return JSON.stringify(sampleOf(schema, text));
}
