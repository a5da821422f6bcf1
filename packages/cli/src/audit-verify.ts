import type { ReinClient } from '@rein/client';
import { GENESIS_HASH, verifyAuditChain } from '@rein/core/internal';

/**
 * `rein audit verify`: reads the caller's tenant's decision log from the start, page by
 * page, and recomputes its hash chain. Returns what to print and whether it held; a broken
 * chain names its first broken entry.
 */
export async function auditVerify(rein: Pick<ReinClient, 'audit'>): Promise<{ ok: boolean; message: string }> {
  let from = { seq: 1, prevHash: GENESIS_HASH };
  let cursor: string | undefined;
  let count = 0;
  do {
    const page = await rein.audit.page({ limit: 1000, ...(cursor ? { cursor } : {}) });
    const check = verifyAuditChain(page.entries, from);
    if (!check.ok) return { ok: false, message: `broken at entry ${check.seq}: ${check.problem}` };
    count += check.entries;
    from = { seq: from.seq + check.entries, prevHash: check.head };
    cursor = page.nextCursor;
  } while (cursor);
  return { ok: true, message: `ok: ${count} entries, head ${from.prevHash}` };
}
