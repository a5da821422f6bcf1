import { describe, expect, it, vi } from 'vitest';
import { checkPrices, unpricedModels } from '../src/policy/budget/cost.js';
import type { Logger } from '../src/shared/logger.js';
import { optionsFromEnv } from '../src/shared/options.js';

const agents = [{ name: 'a', models: ['local/llama3.1', 'gpt-4o'] }] as never;

describe('models without a price', () => {
  it('names every model the fleet may call that REIN_MODEL_PRICES lacks', () => {
    const { model } = optionsFromEnv({ REIN_MODEL: 'gpt-4o-mini', REIN_FALLBACK_MODELS: 'mystery-1' });
    expect(unpricedModels(model, agents)).toEqual(['mystery-1', 'local/llama3.1']);
  });

  it('warns at start by default, and refuses to start with REIN_REQUIRE_PRICES=true', () => {
    const warn = vi.fn();
    const logger = { warn } as unknown as Logger;
    checkPrices(optionsFromEnv({ REIN_MODEL: 'mystery-1' }).model, [], logger);
    expect(warn).toHaveBeenCalledWith({ models: ['mystery-1'] }, expect.stringContaining('no price for mystery-1'));
    expect(() => checkPrices(optionsFromEnv({ REIN_MODEL: 'mystery-1', REIN_REQUIRE_PRICES: 'true' }).model, [], logger)).toThrow(
      /no price for mystery-1.*REIN_REQUIRE_PRICES=true/,
    );
    expect(() => checkPrices(optionsFromEnv({ REIN_REQUIRE_PRICES: 'true' }).model, [], logger)).not.toThrow();
  });
});
