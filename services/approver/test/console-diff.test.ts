import { describe, expect, it } from 'vitest';
import { diffLines, hasChanges } from '../src/console/src/diff.js';

describe("the console's line diff", () => {
  it('pairs a changed line side by side and keeps the rest', () => {
    const rows = diffLines({ orderNo: '2024001', priority: 'high' }, { orderNo: '2024001', priority: 'low' });
    expect(rows.filter((r) => r.kind !== 'same')).toEqual([
      { left: '  "priority": "high"', right: '  "priority": "low"', kind: 'changed' },
    ]);
    expect(rows.filter((r) => r.kind === 'same').map((r) => r.left)).toEqual(['{', '  "orderNo": "2024001",', '}']);
  });

  it('shows added and removed lines on their own side', () => {
    const rows = diffLines({ a: 1 }, { a: 1, b: 2 });
    expect(rows.filter((r) => r.kind !== 'same')).toEqual([
      { left: '  "a": 1', right: '  "a": 1,', kind: 'changed' },
      { right: '  "b": 2', kind: 'added' },
    ]);
    expect(diffLines(['x', 'y'], ['x']).some((r) => r.kind === 'removed' || r.kind === 'changed')).toBe(true);
  });

  it('finds no change between equal values', () => {
    expect(hasChanges(diffLines({ 订单: '张三' }, { 订单: '张三' }))).toBe(false);
    expect(hasChanges(diffLines(undefined, {}))).toBe(true);
  });
});
