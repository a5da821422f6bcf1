import { z } from 'zod';

/** An app's input-filter rules: regular expressions and the fixed answer a match ends the run with. */
export const inputRulesSchema = z.object({
  answer: z.object({ zh: z.string(), en: z.string() }),
  rules: z.array(z.object({ id: z.string(), kind: z.enum(['injection', 'out_of_scope']), pattern: z.string(), flags: z.string() })),
});
export type InputRules = z.infer<typeof inputRulesSchema>;

/**
 * Whether a pattern has a quantifier without an upper bound (`*`, `+`, `{n,}`) outside a
 * character class. A global regex with only bounded quantifiers does bounded work at each
 * position, so masking stays linear in the text; one unbounded run re-scanned from every
 * start is what made the old e-mail pattern quadratic.
 */
export function hasUnboundedQuantifier(pattern: string): boolean {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '*' || c === '+') return true;
    else if (c === '{' && /^\{\d+,\}/.test(pattern.slice(i, i + 12))) return true;
  }
  return false;
}

/** An app's PII-masking rules (the masker in @rein/core applies them). */
export const piiRulesSchema = z.object({
  /** Bounded patterns (numbers), matched on the normalised text. */
  patterns: z.array(
    z.object({
      name: z.string(),
      pattern: z.string().refine((p) => !hasUnboundedQuantifier(p), 'must not use *, + or {n,} (masking must stay linear in the text)'),
      keep: z.enum(['head3tail4', 'head4tail4', 'tail4']),
    }),
  ),
  /** Mask e-mail addresses (found from each `@`, not by a pattern). */
  emails: z.boolean().default(true),
  /** Object keys whose values stay visible in logs (ids; an app adds its own). */
  allowFields: z.array(z.string()),
  /** Literal values that stay visible anywhere (e.g. the public service hotline). */
  allowValues: z.array(z.string()),
});
export type PiiRules = z.input<typeof piiRulesSchema>;
