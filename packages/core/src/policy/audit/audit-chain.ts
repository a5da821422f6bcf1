import { createHash } from 'node:crypto';
import type { AuditEntry } from '@rein/contract';
import { canonicalJson } from '../app/argument-hash.js';

/** The `prevHash` of a log's first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/** sha256 of the canonical JSON of the entry without its `hash`: what `rein audit verify` recomputes. */
export const auditHash = ({ hash: _h, ...entry }: AuditEntry | Omit<AuditEntry, 'hash'>) =>
  createHash('sha256').update(canonicalJson(entry)).digest('hex');

export type ChainCheck = { ok: true; entries: number; head: string } | { ok: false; seq: number; problem: string };

/**
 * Checks a run of entries, oldest first, continuing a chain whose last hash was `prevHash`
 * at `seq - 1`: each entry's hash recomputed, each linked to the one before, no seq skipped
 * or repeated. Names the first entry that breaks it (an altered, removed or moved entry).
 */
export function verifyAuditChain(entries: readonly AuditEntry[], from = { seq: 1, prevHash: GENESIS_HASH }): ChainCheck {
  let { seq, prevHash } = from;
  for (const e of entries) {
    if (e.data?.missing === true && e.hash === GENESIS_HASH) return { ok: false, seq, problem: `entry ${seq} was removed` };
    if (e.seq !== seq) return { ok: false, seq, problem: `expected entry ${seq}, found ${e.seq} (an entry is missing or moved)` };
    if (e.prevHash !== prevHash) return { ok: false, seq, problem: `entry ${seq} does not follow entry ${seq - 1} (prevHash differs)` };
    if (auditHash(e) !== e.hash) return { ok: false, seq, problem: `entry ${seq} was altered (its hash does not match its content)` };
    prevHash = e.hash;
    seq++;
  }
  return { ok: true, entries: entries.length, head: prevHash };
}

/** Whether a verified chain ending at `last` reached the log's head: one that stops short was truncated. */
export function truncation(last: { seq: number; hash: string }, head: { seq: number; hash: string }): string | undefined {
  if (last.seq === head.seq && last.hash === head.hash) return undefined;
  return `the chain ends at entry ${last.seq} but the log's head is entry ${head.seq} (entries removed)`;
}
