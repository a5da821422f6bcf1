import { readFileSync } from 'node:fs';
import { type InputRules, inputRulesSchema } from '@rein/define/internal';

/** The rules' schema lives with the definition API (an app declares its own rules). */
export { type InputRules, inputRulesSchema } from '@rein/define/internal';

export type InputVerdict = { ok: true } | { ok: false; ruleId: string; kind: 'injection' | 'out_of_scope'; answer: string };

/** The bundled rules; operators replace the data file, not the code. */
export function loadInputRules(path?: string): InputRules {
  const raw = readFileSync(path ?? new URL('./input-rules.json', import.meta.url), 'utf8');
  return inputRulesSchema.parse(JSON.parse(raw));
}

/**
 * Rejects prompt injection and out-of-scope requests before any model call. Rules are
 * regular expressions kept in a data file; a match ends the run with a fixed, polite
 * answer and zero tokens.
 */
export function createInputFilter(rules: InputRules = loadInputRules()) {
  const compiled = rules.rules.map((r) => ({ ...r, re: new RegExp(r.pattern, r.flags) }));
  return (input: string): InputVerdict => {
    const hit = compiled.find((r) => r.re.test(input));
    if (!hit) return { ok: true };
    const answer = /[\u3400-\u9fff]/.test(input) ? rules.answer.zh : rules.answer.en;
    return { ok: false, ruleId: hit.id, kind: hit.kind, answer };
  };
}
export type InputFilter = ReturnType<typeof createInputFilter>;
