import { readFileSync } from 'node:fs';
import { type PiiRules, piiRulesSchema } from '@rein/define/internal';

/** The rules' schema lives with the definition API (an app declares its own rules). */
export { hasUnboundedQuantifier, type PiiRules, piiRulesSchema } from '@rein/define/internal';

export function loadPiiRules(path?: string): PiiRules {
  return piiRulesSchema.parse(JSON.parse(readFileSync(path ?? new URL('./pii-rules.json', import.meta.url), 'utf8')));
}

/** Log and span strings longer than this are cut before masking: a log line needs no megabytes. */
export const MAX_MASKED_LOG_CHARS = 64 * 1024;

const KEEP = {
  email: (s: string) => {
    const at = s.indexOf('@');
    return `${s.slice(0, 1)}***@${s.slice(at + 1)}`;
  },
  head3tail4: (s: string) => `${s.slice(0, s.length - 8)}****${s.slice(-4)}`,
  head4tail4: (s: string) => `${s.slice(0, 4)}${'*'.repeat(Math.max(0, s.length - 8))}${s.slice(-4)}`,
  tail4: (s: string) => `${'*'.repeat(Math.max(0, s.length - 4))}${s.slice(-4)}`,
} as const;

/** Characters examined by the masker's scanners: a caller may pass one to count the work. */
export interface MaskWork {
  steps: number;
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
/** `[A-Za-z0-9._%+-]` */
const isLocal = (c: number) => isDigit(c) || isLetter(c) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;
/** `[A-Za-z0-9.-]` */
const isDomain = (c: number) => isDigit(c) || isLetter(c) || c === 46 || c === 45;
/** Space, hyphen, no-break space, ideographic space: what people put between digit groups. */
const isSeparator = (c: number) => c === 32 || c === 45 || c === 0xa0 || c === 0x3000;
/** Full-width digits, plus and hyphen → ASCII; anything else unchanged. */
const halfWidth = (c: number) => (c >= 0xff10 && c <= 0xff19 ? c - 0xff10 + 48 : c === 0xff0b ? 43 : c === 0xff0d ? 45 : c);

/**
 * The text as the patterns see it, with where each character came from: full-width digits
 * become ASCII, and a single separator between two groups of three or more digits goes
 * (`138 1234 5678`, `6222-0212-3456-7890`), so a reformatted number matches like a plain one.
 * Dates (`2024-05-01`) and short lists keep their separators.
 */
export function normalise(text: string, work: MaskWork = { steps: 0 }): { text: string; from: number[] } {
  const codes: number[] = [];
  const from: number[] = [];
  let group = 0; // digits in a row just before i
  for (let i = 0; i < text.length; i++) {
    const c = halfWidth(text.charCodeAt(i));
    work.steps++;
    if (isSeparator(c) && group >= 3) {
      let ahead = 0;
      while (ahead < 3 && i + 1 + ahead < text.length && isDigit(halfWidth(text.charCodeAt(i + 1 + ahead)))) ahead++;
      work.steps += ahead;
      if (ahead === 3) {
        group = 0;
        continue;
      }
    }
    group = isDigit(c) ? group + 1 : 0;
    codes.push(c);
    from.push(i);
  }
  let out = '';
  for (let i = 0; i < codes.length; i += 8192) out += String.fromCharCode(...codes.slice(i, i + 8192));
  return { text: out, from };
}

/**
 * E-mail addresses as `[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}` would find them, but
 * found from each `@` outwards: every character is examined a bounded number of times.
 */
export function findEmails(text: string, work: MaskWork = { steps: 0 }): Array<[start: number, end: number]> {
  const found: Array<[number, number]> = [];
  let scannedTo = 0; // right expansions never re-read what an earlier one read
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    work.steps += at - Math.min(at, scannedTo) + 1;
    let start = at;
    while (start > 0 && isLocal(text.charCodeAt(start - 1))) {
      start--;
      work.steps++;
    }
    let end = at + 1;
    while (end < text.length && isDomain(text.charCodeAt(end))) {
      end++;
      work.steps++;
    }
    scannedTo = end;
    // The last `.` followed by two or more letters ends the address (the regex's backtracking, in one pass back).
    let letters = 0;
    let stop = -1;
    for (let j = end - 1; j > at + 1; j--) {
      work.steps++;
      const c = text.charCodeAt(j);
      if (c === 46 && letters >= 2) {
        stop = j + 1 + letters;
        break;
      }
      letters = isLetter(c) ? letters + 1 : 0;
    }
    if (start < at && stop !== -1) found.push([start, stop]);
  }
  return found;
}

/** Longer than any number the rules match and any plausible address: a stream never holds back more. */
const MAX_HELD_CHARS = 256;

/**
 * Where a streamed text can be cut without cutting a possible match in two: after the last
 * character no match spans (anything but the characters of addresses and numbers, or a
 * space not preceded by a digit). What follows waits for more text, up to MAX_HELD_CHARS.
 */
export function safeCut(text: string): number {
  const floor = Math.max(0, text.length - MAX_HELD_CHARS);
  for (let i = text.length; i > floor; i--) {
    const c = halfWidth(text.charCodeAt(i - 1));
    if (isSeparator(c) && c !== 45) {
      if (i < 2 || !isDigit(halfWidth(text.charCodeAt(i - 2)))) return i;
    } else if (!isLocal(c) && c !== 64) return i;
  }
  return floor;
}

/**
 * Masks mainland-China mobile numbers, ID card numbers, bank card numbers and e-mail
 * addresses in text (final answers, events) and in log objects (every string value, except
 * the allow-listed fields and values), in time linear in the text.
 */
export function createPiiMasker(input: PiiRules = loadPiiRules()) {
  const rules = piiRulesSchema.parse(input);
  const compiled = rules.patterns.map((p) => ({ re: new RegExp(p.pattern, 'g'), keep: KEEP[p.keep] }));
  const allowFields = new Set(rules.allowFields);
  const allowValues = new Set(rules.allowValues);

  const maskText = (text: string, work?: MaskWork): string => {
    const norm = normalise(text, work);
    // Spans of the normalised text, the first rule's match winning an overlap (as when each rule masked the previous one's output).
    // A rule's own matches never overlap, so each character is checked once per rule.
    const taken: Array<{ start: number; end: number; masked: string }> = [];
    const used = new Uint8Array(norm.text.length);
    const take = (s: number, e: number, keep: (m: string) => string) => {
      const m = norm.text.slice(s, e);
      const original = text.slice(norm.from[s], (norm.from[e - 1] ?? 0) + 1);
      if (allowValues.has(m) || allowValues.has(original) || used.subarray(s, e).includes(1)) return;
      used.fill(1, s, e);
      taken.push({ start: s, end: e, masked: keep(m) });
    };
    if (rules.emails) for (const [s, e] of findEmails(norm.text, work)) take(s, e, KEEP.email);
    for (const { re, keep } of compiled) for (const m of norm.text.matchAll(re)) if (m[0]) take(m.index, m.index + m[0].length, keep);
    if (taken.length === 0) return text;
    taken.sort((a, b) => a.start - b.start);
    let out = '';
    let at = 0;
    for (const t of taken) {
      const start = norm.from[t.start] ?? 0;
      out += text.slice(at, start) + t.masked;
      at = (norm.from[t.end - 1] ?? start) + 1;
    }
    return out + text.slice(at);
  };

  const maskDeep = (value: unknown, depth = 0): unknown => {
    if (typeof value === 'string') {
      const cut =
        value.length > MAX_MASKED_LOG_CHARS
          ? `${value.slice(0, MAX_MASKED_LOG_CHARS)}…[${value.length - MAX_MASKED_LOG_CHARS} chars cut]`
          : value;
      return maskText(cut);
    }
    if (depth > 6 || value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((v) => maskDeep(v, depth + 1));
    if (value instanceof Error) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, allowFields.has(k) ? v : maskDeep(v, depth + 1)]));
  };

  return { maskText, maskDeep };
}
export type PiiMasker = ReturnType<typeof createPiiMasker>;
