import type { FastifyInstance } from 'fastify';
import { InvalidRequestError } from '../shared/errors.js';

/** Deeper JSON than any Rein body needs; beyond it, recursive code (zod, JSON.stringify) risks the stack. */
export const MAX_JSON_DEPTH = 32;

/**
 * How deeply `text` nests arrays and objects, counted in one pass without recursion and
 * stopping as soon as `limit` is exceeded (brackets inside strings do not count).
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character (an escaped quote does not end the string).
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** A UTF-16 surrogate standing alone (with the `u` flag a paired one is one code point, not `Cs`). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether a parsed JSON value holds a lone surrogate (`"\ud800"`) in a string or a key:
 * text that is not Unicode, which PostgreSQL's json refuses, so a run holding it could
 * never be archived. The walk is bounded by the nesting bound checked before parsing.
 */
export function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (value !== null && typeof value === 'object')
    return Object.entries(value).some(([key, v]) => LONE_SURROGATE.test(key) || hasLoneSurrogate(v));
  return false;
}

/**
 * Bodies are JSON only: Fastify's default text/plain parser is removed, so text/plain is a
 * 415 like any other media type. JSON bodies go through Fastify's own parser (which refuses `__proto__` and
 * `constructor.prototype` keys) after a nesting bound, so a 5,000-level body is a 400
 * at the boundary instead of a stack overflow somewhere inside; a body whose text is not
 * Unicode (a lone surrogate) is a 400 too, on every route, before any handler stores it.
 */
export function boundJsonDepth(app: FastifyInstance, limit = MAX_JSON_DEPTH): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (jsonDepthExceeds(body as string, limit)) {
      done(new InvalidRequestError(`the body nests deeper than ${limit} levels`), undefined);
      return;
    }
    parse(req, body as string, (err, value) => {
      if (!err && hasLoneSurrogate(value))
        done(new InvalidRequestError('the body holds text that is not Unicode (an unpaired UTF-16 surrogate)'), undefined);
      else done(err, value);
    });
  });
}
