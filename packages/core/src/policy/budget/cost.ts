import { ConfigError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { ReinOptions } from '../../shared/options.js';
import type { Price } from '../../shared/price.js';

/** The part of an agent profile the price check reads (declared here so budgets need not import agents). */
export interface PricedAgent {
  models?: readonly string[];
}

/** Money for one model call from the price table; unknown models cost 0 (counted in `rein_model_price_missing_total`). */
export function costOf(prices: Record<string, Price>, model: string, usage: { promptTokens: number; completionTokens: number }): number {
  const price = prices[model];
  if (!price) return 0;
  return (usage.promptTokens * price.promptPerMTok + usage.completionTokens * price.completionPerMTok) / 1_000_000;
}

/** The models the fleet may call: REIN_MODEL, its fallbacks, every agent's own. */
export function fleetModels(model: Pick<ReinOptions['model'], 'name' | 'fallbacks'>, agents: readonly PricedAgent[]): Set<string> {
  const models = new Set([model.name, ...model.fallbacks]);
  for (const a of agents) for (const m of a.models ?? []) models.add(m);
  return models;
}

/** The models the fleet may call that the price table lacks. */
export function unpricedModels(
  model: Pick<ReinOptions['model'], 'name' | 'fallbacks' | 'prices'>,
  agents: readonly PricedAgent[],
): string[] {
  return [...fleetModels(model, agents)].filter((m) => !Object.hasOwn(model.prices, m));
}

/**
 * At start: a model without a price costs 0, so cost budgets and quotas never stop it.
 * Warns naming the models, or (REIN_REQUIRE_PRICES=true) refuses to start.
 */
export function checkPrices(model: ReinOptions['model'], agents: readonly PricedAgent[], logger: Logger): void {
  const missing = unpricedModels(model, agents);
  if (missing.length === 0) return;
  const line = `REIN_MODEL_PRICES has no price for ${missing.join(', ')}: their calls cost 0, so cost budgets and quotas never stop them`;
  if (model.requirePrices) throw new ConfigError(`${line} (REIN_REQUIRE_PRICES=true): add their prices`);
  logger.warn({ models: missing }, line);
}
