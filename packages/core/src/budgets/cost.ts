import type { Price } from '../config.js';

/** Money for one model call from the price table; unknown models cost 0. */
export function costOf(prices: Record<string, Price>, model: string, usage: { promptTokens: number; completionTokens: number }): number {
  const price = prices[model];
  if (!price) return 0;
  return (usage.promptTokens * price.promptPerMTok + usage.completionTokens * price.completionPerMTok) / 1_000_000;
}
