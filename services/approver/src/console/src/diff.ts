/** A line diff of two JSON values, for side-by-side display: what an edit or a replay changed. */

export interface DiffRow {
  left?: string;
  right?: string;
  kind: 'same' | 'removed' | 'added' | 'changed';
}

const lines = (v: unknown): string[] => (v === undefined ? [] : (JSON.stringify(v, null, 2) ?? String(v)).split('\n'));

/** Longest common subsequence over lines; removed and added runs side by side are paired as changes. */
export function diffLines(before: unknown, after: unknown): DiffRow[] {
  const a = lines(before);
  const b = lines(after);
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      (lcs[i] as number[])[j] =
        a[i] === b[j]
          ? ((lcs[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lcs[i + 1] as number[])[j] as number, (lcs[i] as number[])[j + 1] as number);
  const rows: DiffRow[] = [];
  let removed: string[] = [];
  let added: string[] = [];
  const flush = () => {
    for (let k = 0; k < Math.max(removed.length, added.length); k++) {
      const left = removed[k];
      const right = added[k];
      rows.push({
        ...(left !== undefined ? { left } : {}),
        ...(right !== undefined ? { right } : {}),
        kind: left !== undefined && right !== undefined ? 'changed' : left !== undefined ? 'removed' : 'added',
      });
    }
    removed = [];
    added = [];
  };
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      flush();
      rows.push({ left: a[i] as string, right: b[j] as string, kind: 'same' });
      i++;
      j++;
    } else if (j < m && (i >= n || ((lcs[i] as number[])[j + 1] as number) >= ((lcs[i + 1] as number[])[j] as number))) {
      added.push(b[j++] as string);
    } else {
      removed.push(a[i++] as string);
    }
  }
  flush();
  return rows;
}

export const hasChanges = (rows: DiffRow[]): boolean => rows.some((r) => r.kind !== 'same');
