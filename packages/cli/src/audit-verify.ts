import type { ReinClient } from '@rein/client';
import { GENESIS_HASH, truncation, verifyAuditChain } from '@rein/core/cli';

/** A head kept outside the log: the chain must still hold entry `seq` with this `hash`. */
export interface KeptHead {
  seq: number;
  hash: string;
  /** Where it was kept, for the message. */
  source: string;
}

/** `--expect-head <seq>:<hash>`, checked; throws naming the expected form. */
export function parseKeptHead(value: string): KeptHead {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/.exec(value);
  if (!m) throw new Error('--expect-head takes <seq>:<hash>, the seq and the 64-hex hash a verify printed');
  return { seq: Number(m[1]), hash: m[2] as string, source: 'the head you kept' };
}

/**
 * `rein audit verify`: reads the caller's tenant's decision log from the start, page by
 * page, and recomputes its hash chain. Returns what to print and whether it held; a broken
 * chain names its first broken entry. A chain is also checked against the heads kept
 * outside Redis — the operator's (`--expect-head`) and the archive's latest checkpoint —
 * since one whose last entries were removed and head rewound verifies on its own.
 */
export async function auditVerify(rein: Pick<ReinClient, 'audit'>, expected?: KeptHead): Promise<{ ok: boolean; message: string }> {
  let from = { seq: 1, prevHash: GENESIS_HASH };
  let cursor: string | undefined;
  let head = { seq: 0, hash: GENESIS_HASH };
  const kept: KeptHead[] = expected && expected.seq > 0 ? [expected] : [];
  /** The chain's hash at each kept seq, as read. */
  const found = new Map<number, string>();
  do {
    const page = await rein.audit.page({ limit: 1000, ...(cursor ? { cursor } : {}) });
    // Each page is read up to the head it saw: the last page's head is where the chain must end.
    head = page.head;
    if (page.checkpoint && !cursor) kept.push({ ...page.checkpoint, source: `the archive's checkpoint of ${page.checkpoint.at}` });
    const check = verifyAuditChain(page.entries, from);
    if (!check.ok) return { ok: false, message: `broken at entry ${check.seq}: ${check.problem}` };
    for (const e of page.entries) if (kept.some((k) => k.seq === e.seq)) found.set(e.seq, e.hash);
    from = { seq: from.seq + check.entries, prevHash: check.head };
    cursor = page.nextCursor;
  } while (cursor);
  const cut = truncation({ seq: from.seq - 1, hash: from.prevHash }, head);
  if (cut) return { ok: false, message: `broken at entry ${from.seq}: ${cut}` };
  for (const k of kept) {
    const hash = found.get(k.seq);
    if (hash === undefined)
      return {
        ok: false,
        message: `broken at entry ${from.seq}: the chain ends at entry ${from.seq - 1}, before entry ${k.seq} that ${k.source} names (entries removed, the head rewound)`,
      };
    if (hash !== k.hash)
      return {
        ok: false,
        message: `broken at entry ${k.seq}: its hash is ${hash}, not ${k.hash} as ${k.source} says (the log was cut back and written again)`,
      };
  }
  return {
    ok: true,
    message: `ok: ${from.seq - 1} entries, head ${from.seq - 1}:${from.prevHash} (keep it elsewhere; a later verify --expect-head ${from.seq - 1}:${from.prevHash} checks the log still holds it)`,
  };
}
