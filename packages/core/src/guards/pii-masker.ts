import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const piiRulesSchema = z.object({
  patterns: z.array(z.object({ name: z.string(), pattern: z.string(), keep: z.enum(['email', 'head3tail4', 'head4tail4', 'tail4']) })),
  /** Object keys whose values stay visible in logs (ids; an app adds its own). */
  allowFields: z.array(z.string()),
  /** Literal values that stay visible anywhere (e.g. the public service hotline). */
  allowValues: z.array(z.string()),
});
export type PiiRules = z.infer<typeof piiRulesSchema>;

export function loadPiiRules(path?: string): PiiRules {
  return piiRulesSchema.parse(JSON.parse(readFileSync(path ?? new URL('./pii-rules.json', import.meta.url), 'utf8')));
}

const KEEP = {
  email: (s: string) => {
    const [user = '', domain = ''] = s.split('@');
    return `${user.slice(0, 1)}***@${domain}`;
  },
  head3tail4: (s: string) => `${s.slice(0, s.length - 8)}****${s.slice(-4)}`,
  head4tail4: (s: string) => `${s.slice(0, 4)}${'*'.repeat(Math.max(0, s.length - 8))}${s.slice(-4)}`,
  tail4: (s: string) => `${'*'.repeat(Math.max(0, s.length - 4))}${s.slice(-4)}`,
} as const;

/**
 * Masks mainland-China mobile numbers, ID card numbers, bank card numbers and e-mail
 * addresses in text (final answers) and in log objects (every string value, except
 * the allow-listed fields and values).
 */
export function createPiiMasker(rules: PiiRules = loadPiiRules()) {
  const compiled = rules.patterns.map((p) => ({ re: new RegExp(p.pattern, 'g'), keep: KEEP[p.keep] }));
  const allowFields = new Set(rules.allowFields);
  const allowValues = new Set(rules.allowValues);

  const maskText = (text: string): string =>
    compiled.reduce((out, { re, keep }) => out.replace(re, (m) => (allowValues.has(m) ? m : keep(m))), text);

  const maskDeep = (value: unknown, depth = 0): unknown => {
    if (typeof value === 'string') return maskText(value);
    if (depth > 6 || value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((v) => maskDeep(v, depth + 1));
    if (value instanceof Error) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, allowFields.has(k) ? v : maskDeep(v, depth + 1)]));
  };

  return { maskText, maskDeep };
}
export type PiiMasker = ReturnType<typeof createPiiMasker>;
