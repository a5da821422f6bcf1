import { z } from 'zod';

/** An agent's declared answer shape, with the JSON Schema the provider is asked to follow. */
export interface OutputSpec {
  schema: z.ZodType;
  /** `response_format.json_schema` as OpenAI-compatible endpoints take it. */
  jsonSchema: { name: string; schema: Record<string, unknown> };
}

export function outputSpec(agent: string, schema: z.ZodType): OutputSpec {
  const { $schema: _drop, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return { schema, jsonSchema: { name: `${agent.replace(/-/g, '_')}_output`, schema: json } };
}
