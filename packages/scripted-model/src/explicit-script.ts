import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ScriptMessage, ScriptReply } from './script.js';

/**
 * One assistant turn of an explicit script: the tool calls to make (exact names and
 * arguments) and/or the text to say. A script is the n-th reply for the n-th assistant
 * turn of a conversation; the last turn answers every turn past the end.
 */
export const scriptTurnSchema = z
  .object({
    content: z.string().nullable().default(null),
    toolCalls: z
      .array(z.object({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()).default({}) }).strict())
      .default([]),
  })
  .strict()
  .refine((t) => t.content !== null || t.toolCalls.length > 0, { message: 'a turn says something or calls a tool' });
const turnsSchema = z
  .array(scriptTurnSchema)
  .min(1)
  .refine((turns) => turns.at(-1)?.toolCalls.length === 0, { message: 'the last turn is an answer (no toolCalls), so a run ends' });
/** `byModel`: the turns for requests naming that model (two scripted models, e.g. a replay's with another model). */
export const scriptSchema = z.object({ turns: turnsSchema, byModel: z.record(z.string(), turnsSchema).optional() }).strict();
export type ExplicitScript = z.infer<typeof scriptSchema>;

/** Reads and checks a script file (SCRIPTED_MODEL_SCRIPT); a clear message on what is wrong. */
export function loadScript(path: string): ExplicitScript {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`SCRIPTED_MODEL_SCRIPT ${path}: ${(err as Error).message}`);
  }
  const parsed = scriptSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(
      `SCRIPTED_MODEL_SCRIPT ${path}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data;
}

/** The reply for the conversation's next assistant turn, from the requested model's turns when the script has them. */
export function playScript(script: ExplicitScript, messages: ScriptMessage[], model?: string): ScriptReply {
  const turn = messages.filter((m) => m.role === 'assistant').length;
  const turns = (model !== undefined ? script.byModel?.[model] : undefined) ?? script.turns;
  const { content, toolCalls } = turns[Math.min(turn, turns.length - 1)] as ExplicitScript['turns'][number];
  return { content, toolCalls: toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })) };
}
