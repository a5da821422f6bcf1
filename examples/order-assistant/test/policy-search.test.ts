import { describe, expect, it } from 'vitest';
import { PolicySearch, tokenize } from '../src/policy-search.js';

describe('policy search', () => {
  const search = new PolicySearch();
  it('splits Chinese into characters and bigrams, English into words', () => {
    expect(tokenize('退货 return')).toEqual(['退', '退货', '货', 'return']);
  });
  it.each([
    ['超时发货 赔偿标准', 'P-001'],
    ['支持 7 天无理由退货吗？', 'P-002'],
    ['late shipment compensation', 'P-001'],
    ['已发货 退货 退款', 'P-004'],
  ])('ranks the right policy first for "%s"', (query, id) => {
    const top = search.search(query);
    expect(top[0]?.id).toBe(id);
    expect(top.length).toBeLessThanOrEqual(3);
  });
});
