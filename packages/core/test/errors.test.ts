import { describe, expect, it } from 'vitest';
import {
  BreakerOpenError,
  BulkheadFullError,
  isDelaying,
  ModelRejectedError,
  ModelReplyInvalidError,
  ModelUnavailableError,
  ReinError,
  StaleStepError,
  terminalReason,
} from '../src/shared/errors.js';

describe('errors crossing the worker boundary', () => {
  it('map to a terminal reason by class, whatever their message says', () => {
    expect(terminalReason(new ModelUnavailableError('x'))).toBe('model_unavailable');
    expect(terminalReason(new ModelRejectedError('model_reply_invalid: looks like another code'))).toBe('model_unavailable');
    expect(terminalReason(new ModelReplyInvalidError('x'))).toBe('model_reply_invalid');
    expect(terminalReason(new Error('model_unavailable: a plain error with a code-like message'))).toBe('internal_error');
    expect(terminalReason(new ReinError('model_unavailable', 'a bare ReinError is not a model failure'))).toBe('internal_error');
  });

  it('delay the step only for a busy or broken dependency', () => {
    expect(isDelaying(new BreakerOpenError('model:m', 100))).toBe(true);
    expect(isDelaying(new BulkheadFullError('model:m', 'fleet'))).toBe(true);
    expect(isDelaying(new ModelUnavailableError('x'))).toBe(true);
    expect(isDelaying(new ModelRejectedError('x'))).toBe(false);
    expect(isDelaying(new StaleStepError('x'))).toBe(false);
  });
});
