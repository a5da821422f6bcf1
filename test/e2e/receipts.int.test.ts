import { generateKeyPairSync } from 'node:crypto';
import type { AuditKeys, AuditReceipt, RunView } from '@rein/contract';
import { verifyReceipt } from '@rein/core/internal';
import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const signingKey = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const fleet = fleetPerFile({ env: { REIN_AUDIT_SIGNING_KEY: signingKey } });

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';

async function parked(): Promise<RunView> {
  const submitted = await fleet().callApi('POST', '/v1/runs', KEYS.user.key, { input: LATE_ORDER });
  expect(submitted.status).toBe(202);
  for (;;) {
    const run = (await fleet().callApi('GET', `/v1/runs/${submitted.body.id}`, KEYS.user.key)).body as RunView;
    if (run.status === 'pending_approval' && run.pendingApprovals.length) return run;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Decisions made through the approver and the API answer receipts of the very entries they wrote. */
describe('decision receipts on the decision routes', () => {
  it('an approval, a batch and a cancel each answer a receipt of their own entry, signed with the published key', async () => {
    const keys = (await fleet().callApi('GET', '/v1/audit/keys', KEYS.user.key)).body as AuditKeys;
    expect(keys.keys).toHaveLength(1);

    const first = await parked();
    const approvalId = first.pendingApprovals[0]?.id as string;
    const approved = await fleet().callApprover('POST', `/v1/approvals/${approvalId}/approve`, KEYS.approver.key, {});
    expect(approved.status).toBe(200);
    const receipt = approved.body.receipt as AuditReceipt;
    expect(receipt.entry).toMatchObject({ tenantId: 'e2e', actor: 'lisi', action: 'approval.approved', subject: { approvalId } });
    expect(verifyReceipt(receipt, keys)).toEqual({ ok: true });

    const second = await parked();
    const batch = await fleet().callApprover('POST', '/v1/approvals/decide', KEYS.approver.key, {
      ids: [second.pendingApprovals[0]?.id, 'no-such-approval'],
      verdict: 'reject',
      comment: 'not this one',
    });
    const [ok, missing] = batch.body.results as Array<{ ok: boolean; receipt?: AuditReceipt }>;
    expect(ok?.receipt?.entry).toMatchObject({ action: 'approval.rejected', subject: { approvalId: second.pendingApprovals[0]?.id } });
    expect(verifyReceipt(ok?.receipt as AuditReceipt, keys)).toEqual({ ok: true });
    expect(missing).toMatchObject({ ok: false });
    expect(missing?.receipt).toBeUndefined();

    const third = await parked();
    const cancelled = await fleet().callApi('POST', `/v1/runs/${third.id}/cancel`, KEYS.user.key);
    expect(cancelled.body.receipt.entry).toMatchObject({ action: 'run.cancelled', actor: 'zhangsan', subject: { runId: third.id } });
    expect(verifyReceipt(cancelled.body.receipt, keys)).toEqual({ ok: true });
    // Each receipt names its own place in the chain.
    expect(new Set([receipt.seq, ok?.receipt?.seq, cancelled.body.receipt.seq]).size).toBe(3);
  }, 120_000);
});
