import type { AuditReceipt, Principal } from '@rein/contract';
import type { FastifyReply } from 'fastify';
import type { Receipts } from '../features/audit/receipts.js';

/**
 * A decision's answer with its signed receipt, when the fleet has an audit key: in the body
 * as `receipt`, or — for an answer with no body (204) — in the `rein-receipt` header as
 * base64url JSON.
 */
export async function receipted<T extends object>(
  receipts: Receipts,
  principal: Principal,
  decide: () => Promise<T>,
): Promise<T & { receipt?: AuditReceipt }> {
  const { value, receipt } = await receipts.of(principal.tenantId, decide);
  return receipt ? { ...value, receipt } : value;
}

export async function receiptedHeader(receipts: Receipts, principal: Principal, reply: FastifyReply, decide: () => Promise<void>) {
  const { receipt } = await receipts.of(principal.tenantId, decide);
  if (receipt) reply.header('rein-receipt', Buffer.from(JSON.stringify(receipt)).toString('base64url'));
}
