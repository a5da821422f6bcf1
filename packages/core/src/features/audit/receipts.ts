import type { AuditReceipt } from '@rein/contract';
import type { AuditLog } from '../../adapters/redis/audit-log.js';

/**
 * Decision receipts: a decision runs, and the last entry it wrote to the deciding tenant's
 * log is signed with the fleet's audit key and handed back with its answer. Minted in the
 * decision's own request, so what a decider holds is what was written then, whatever
 * happens to the log later. No audit key configured: decisions answer as before.
 */
export function createReceipts(audit: Pick<AuditLog, 'collect' | 'signer'>) {
  return {
    async of<T>(tenantId: string, decide: () => Promise<T>): Promise<{ value: T; receipt?: AuditReceipt }> {
      const signer = audit.signer;
      if (!signer) return { value: await decide() };
      const { value, entries } = await audit.collect(decide);
      const entry = entries.filter((e) => e.tenantId === tenantId).at(-1);
      return entry ? { value, receipt: signer.receipt(entry) } : { value };
    },
  };
}
export type Receipts = ReturnType<typeof createReceipts>;
