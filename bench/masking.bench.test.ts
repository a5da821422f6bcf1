import { describe, expect, it } from 'vitest';
import { createPiiMasker } from '../packages/core/src/shared/guards/pii-masker.js';

/**
 * PII masking time per character at 100 KB and at 1 MB of the inputs that made the old
 * e-mail pattern quadratic, side by side in one run. Linear masking keeps the ratio near 1
 * (the old pattern's grew with the length: 95 ms at 10k characters, 4.6 s at 80k).
 * Reported, never asserted: `npm run bench`.
 */
const masker = createPiiMasker();
const inputs: Record<string, (n: number) => string> = {
  'a run without @': (n) => 'a'.repeat(n),
  'many @': (n) => 'a@'.repeat(n / 2),
  'local runs before each @': (n) => `${'a'.repeat(1000)}@b`.repeat(Math.ceil(n / 1002)),
  'digit groups': (n) => '138 1234 5678 '.repeat(Math.ceil(n / 14)),
  'an ordinary answer': (n) => '已为订单 2024001 创建工单，联系 li.lei@example.com 或 138 1234 5678。'.repeat(Math.ceil(n / 50)),
};

function nsPerChar(text: string): number {
  masker.maskText(text.slice(0, 1000)); // warm
  const rounds = 3;
  const started = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) masker.maskText(text);
  return Number(process.hrtime.bigint() - started) / rounds / text.length;
}

describe('PII masking cost per character', () => {
  it('stays flat from 100 KB to 1 MB', () => {
    const rows = Object.entries(inputs).map(([name, make]) => {
      const small = nsPerChar(make(100 * 1024));
      const large = nsPerChar(make(1024 * 1024));
      return {
        input: name,
        'ns/char 100 KB': small.toFixed(1),
        'ns/char 1 MB': large.toFixed(1),
        'ratio 1 MB ÷ 100 KB': (large / small).toFixed(2),
      };
    });
    console.table(rows);
    expect(rows).toHaveLength(Object.keys(inputs).length);
  });
});
