import type { OutputSpec } from '@rein/define/internal';
import type { z } from 'zod';

/** An agent's declared answer shape lives with the definition API. */
export { type OutputSpec, outputSpec } from '@rein/define/internal';

/** One repair turn, then `output_invalid`: a model that cannot follow the schema twice will not a third time. */
export const OUTPUT_REPAIR_TURNS = 1;

export type OutputCheck = { ok: true; value: unknown } | { ok: false; error: string };

/** Parses and validates a final answer against the agent's schema; pure, so the policy can use it. */
export function checkOutput(schema: z.ZodType, content: string | null): OutputCheck {
  let json: unknown;
  try {
    json = JSON.parse(content ?? '');
  } catch (err) {
    return { ok: false, error: `the answer is not JSON: ${(err as Error).message}` };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ') };
}

/** The feedback of the repair turn: what was wrong, and the shape to answer in. */
export function repairMessage(error: string, spec: OutputSpec): string {
  return `Your final answer did not match the required output schema (${error}). Answer again with only a JSON value matching this JSON Schema: ${JSON.stringify(spec.jsonSchema.schema)}`;
}
