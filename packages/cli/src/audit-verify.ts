import type { ReinClient } from '@rein/client';
import { GENESIS_HASH, truncation, verifyAuditChain } from '@rein/core/internal';

/**
 * `rein audit verify`: reads the caller's tenant's decision log from the start, page by
 * page, and recomputes its hash chain. Returns what to print and whether it held; a broken
 * chain names its first broken entry.
 */
export async function auditVerify(rein: Pick<ReinClient, 'audit'>): Promise<{ ok: boolean; message: string }> {
  let from = { seq: 1, prevHash: GENESIS_HASH };
  let cursor: string | undefined;
  let head = { seq: 0, hash: GENESIS_HASH };
  do {
    const page = await rein.audit.page({ limit: 1000, ...(cursor ? { cursor } : {}) });
    // Each page is read up to the head it saw: the last page's head is where the chain must end.
    head = page.head;
    const check = verifyAuditChain(page.entries, from);
    if (!check.ok) return { ok: false, message: `broken at entry ${check.seq}: ${check.problem}` };
    from = { seq: from.seq + check.entries, prevHash: check.head };
    cursor = page.nextCursor;
  } while (cursor);
  const cut = truncation({ seq: from.seq - 1, hash: from.prevHash }, head);
  if (cut) return { ok: false, message: `broken at entry ${from.seq}: ${cut}` };
  return { ok: true, message: `ok: ${from.seq - 1} entries, head ${from.prevHash} (keep it elsewhere: a later verify must extend it)` };
}
