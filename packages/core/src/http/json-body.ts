import type { FastifyInstance } from 'fastify';
import { InvalidRequestError } from '../errors.js';

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

/**
 * Bodies are JSON only: Fastify's default text/plain parser is removed, so text/plain is a
 * 415 like any other media type. JSON bodies go through Fastify's own parser (which refuses `__proto__` and
 * `constructor.prototype` keys) after a nesting bound, so a 5,000-level body is a 400
 * at the boundary instead of a stack overflow somewhere inside.
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
    parse(req, body as string, done);
  });
}
