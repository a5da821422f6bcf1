import { generateKeyPairSync } from 'node:crypto';
import type { AuditEntry, SignedCheckpoint } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { auditHash, GENESIS_HASH } from '../src/policy/audit/audit-chain.js';
import { createAuditSigner, verifyCheckpoint, verifyLogAgainstCheckpoint, verifyReceipt } from '../src/policy/audit/receipts.js';

const ed25519 = () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
};

/** A chain of `n` entries of one tenant, hashed as the log hashes them; `actor(seq)` decided each. */
function chain(n: number, tenantId = 'acme', actor = (_seq: number) => 'ann'): AuditEntry[] {
  const out: AuditEntry[] = [];
  let prevHash = GENESIS_HASH;
  for (let seq = 1; seq <= n; seq++) {
    const unhashed = {
      seq,
      at: new Date(Date.UTC(2026, 11, 5, 0, 0, seq)).toISOString(),
      tenantId,
      actor: actor(seq),
      action: 'approval.approved' as const,
      subject: { approvalId: `a${seq}` },
      prevHash,
    };
    const entry = { ...unhashed, hash: auditHash(unhashed) };
    out.push(entry);
    prevHash = entry.hash;
  }
  return out;
}

describe('decision receipts', () => {
  const a = ed25519();
  const signer = createAuditSigner(a.privatePem);
  const [first, second] = chain(2) as [AuditEntry, AuditEntry];

  it('verify with the keys the fleet publishes', () => {
    expect(verifyReceipt(signer.receipt(second), signer.keys())).toEqual({ ok: true });
    expect(signer.keys().keys).toEqual([expect.objectContaining({ keyId: signer.keyId, algorithm: 'Ed25519', status: 'active' })]);
  });

  it('refuse an altered entry, a forged signature, and a receipt moved to another entry', () => {
    const r = signer.receipt(second);
    expect(verifyReceipt({ ...r, entry: { ...r.entry, actor: 'mallory' } }, signer.keys())).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/altered/),
    });
    // Re-hashed after the change: the hash is right, the signature is over the other hash.
    const rewritten = { ...r.entry, actor: 'mallory' };
    const rehashed = { ...rewritten, hash: auditHash(rewritten) };
    expect(verifyReceipt({ ...r, entry: rehashed, hash: rehashed.hash }, signer.keys())).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/signature does not verify/),
    });
    const forged = signer.receipt(first).signature;
    expect(verifyReceipt({ ...r, signature: forged }, signer.keys()).ok).toBe(false);
    expect(verifyReceipt({ ...r, seq: 1 }, signer.keys())).toMatchObject({ ok: false, problem: expect.stringMatching(/holds entry 2/) });
    // Another fleet's key, even with this fleet's key id claimed, does not verify.
    const other = createAuditSigner(ed25519().privatePem);
    expect(verifyReceipt({ ...other.receipt(second), keyId: signer.keyId }, signer.keys()).ok).toBe(false);
    const swapped = { keys: [{ ...signer.keys().keys[0], publicKey: other.keys().keys[0]?.publicKey } as never] };
    expect(verifyReceipt(r, swapped)).toMatchObject({ ok: false, problem: expect.stringMatching(/is another key/) });
  });

  it('keep verifying after a rotation, with the retired key listed; not without it', () => {
    const old = signer.receipt(first);
    const b = ed25519();
    const rotated = createAuditSigner(b.privatePem, [a.publicPem]);
    expect(rotated.keys().keys.map((k) => k.status)).toEqual(['active', 'retired']);
    expect(verifyReceipt(old, rotated.keys())).toEqual({ ok: true });
    expect(verifyReceipt(rotated.receipt(second), rotated.keys())).toEqual({ ok: true });
    expect(verifyReceipt(old, createAuditSigner(b.privatePem).keys())).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/keys given do not hold/),
    });
  });

  it('refuse keys that are not Ed25519', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(() => createAuditSigner(rsa)).toThrow(/not Ed25519/);
  });
});

describe('signed checkpoints', () => {
  const signer = createAuditSigner(ed25519().privatePem);
  const log = chain(5);
  const at = '2026-12-05T01:00:00.000Z';
  const kept: SignedCheckpoint = signer.checkpoint({ tenantId: 'acme', seq: 4, hash: (log[3] as AuditEntry).hash, at });

  it('verify, and a checkpoint signature never passes as a receipt', () => {
    expect(verifyCheckpoint(kept, signer.keys())).toEqual({ ok: true });
    expect(verifyCheckpoint({ ...kept, seq: 5 }, signer.keys()).ok).toBe(false);
    const asReceipt = { entry: log[3] as AuditEntry, seq: 4, hash: kept.hash, keyId: kept.keyId, signature: kept.signature };
    expect(verifyReceipt(asReceipt, signer.keys()).ok).toBe(false);
  });

  it('catch an exported log cut back, cut back and written again, or of another tenant', () => {
    expect(verifyLogAgainstCheckpoint(log, kept)).toEqual({ ok: true });
    expect(verifyLogAgainstCheckpoint(log.slice(0, 3), kept)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/entries removed/),
    });
    // Cut back to entry 3 and written again: the chain itself holds, only the checkpoint shows it.
    const rechained = chain(5, 'acme', (seq) => (seq > 3 ? 'mallory' : 'ann'));
    expect(verifyLogAgainstCheckpoint(rechained, kept)).toMatchObject({ ok: false, problem: expect.stringMatching(/rewritten/) });
    expect(verifyLogAgainstCheckpoint(chain(5, 'globex'), kept)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/tenant globex/),
    });
    const altered = log.map((e, i) => (i === 1 ? { ...e, actor: 'mallory' } : e));
    expect(verifyLogAgainstCheckpoint(altered, kept)).toMatchObject({ ok: false, problem: expect.stringMatching(/broken at entry 2/) });
  });
});
