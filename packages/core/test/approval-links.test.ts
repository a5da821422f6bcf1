import type { ApprovalView, Principal } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { createApprovalLinks } from '../src/features/approvals/approval-links.js';

const approver: Principal = { tenantId: 'acme', userId: 'bob', roles: ['approver'] };
const pending = {
  id: 'r1.1.0',
  runId: 'r1',
  tenantId: 'acme',
  requestedBy: 'alice',
  toolName: 'call_billing',
  summary: 'The remote agent billing asks: Which order?',
  arguments: { input: '' },
  argsHash: 'h',
  risk: 'high',
  requiredRole: 'approver',
  status: 'pending',
  expiresAt: new Date(Date.now() + 60_000).toISOString(),
} as unknown as ApprovalView;

const linksOver = (approval: ApprovalView) =>
  createApprovalLinks({
    approvals: {
      get: async () => approval,
      decide: async () => {
        throw new Error('not called');
      },
    },
    uses: { claim: async () => true, spent: async () => false },
    keys: [{ key: 'k', ...approver }],
    secret: 's'.repeat(32),
    consoleUrl: 'https://console.test',
  });

describe('approval links of a question (kind input)', () => {
  it('mints none: a link cannot carry the answer, so its approve link would be spent on a refusal', async () => {
    await expect(linksOver({ ...pending, kind: 'input' }).mint(approver, pending.id, {})).rejects.toMatchObject({
      code: 'invalid_arguments',
      status: 400,
    });
    // Any other approval of the same rights gets its pair.
    expect(await linksOver(pending).mint(approver, pending.id, {})).toMatchObject({ approveUrl: expect.stringContaining('/links?token=') });
  });
});
