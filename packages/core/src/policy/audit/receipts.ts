import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import type { AuditEntry, AuditKeys, AuditReceipt, SignedCheckpoint } from '@rein/contract';
import { auditHash, GENESIS_HASH, verifyAuditChain } from './audit-chain.js';

/**
 * Decision receipts and signed checkpoints: Ed25519 signatures by the fleet's audit key over
 * a few lines that name what is signed (a receipt and a checkpoint can never stand for one
 * another), the tenant, the seq and the hash — the hash already covers the whole entry and,
 * through `prevHash`, the chain before it. node:crypto signs and verifies: no library needed.
 */
const receiptMessage = (tenantId: string, seq: number, hash: string) => Buffer.from(`rein.audit.receipt.v1\n${tenantId}\n${seq}\n${hash}`);
const checkpointMessage = (c: Pick<SignedCheckpoint, 'tenantId' | 'seq' | 'hash' | 'at'>) =>
  Buffer.from(`rein.audit.checkpoint.v1\n${c.tenantId}\n${c.seq}\n${c.hash}\n${c.at}`);

/** A key's id: the first 16 hex digits of the sha256 of its public key (SPKI DER), the same for anyone who holds it. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

function ed25519Public(pem: string, what: string): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${what} is a ${key.asymmetricKeyType} key, not Ed25519`);
  return key;
}

/** The signer of one fleet: its private key (PKCS#8 PEM) and the public keys it retired, which still verify. */
export function createAuditSigner(privateKeyPem: string, retiredPublicKeyPems: readonly string[] = []) {
  const privateKey = createPrivateKey(privateKeyPem);
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new Error(`REIN_AUDIT_SIGNING_KEY is a ${privateKey.asymmetricKeyType} key, not Ed25519`);
  const publicKey = createPublicKey(privateKey);
  const keyId = keyIdOf(publicKey);
  const pem = (k: KeyObject) => k.export({ type: 'spki', format: 'pem' }).toString();
  const retired = retiredPublicKeyPems.map((p, i) => ed25519Public(p, `REIN_AUDIT_RETIRED_KEYS[${i}]`)).filter((k) => keyIdOf(k) !== keyId);
  const keys: AuditKeys = {
    keys: [
      { keyId, algorithm: 'Ed25519', publicKey: pem(publicKey), status: 'active' },
      ...retired.map((k) => ({ keyId: keyIdOf(k), algorithm: 'Ed25519' as const, publicKey: pem(k), status: 'retired' as const })),
    ],
  };
  const signed = (message: Buffer) => sign(null, message, privateKey).toString('base64url');
  return {
    keyId,
    keys: () => keys,
    receipt: (entry: AuditEntry): AuditReceipt => ({
      entry,
      seq: entry.seq,
      hash: entry.hash,
      keyId,
      signature: signed(receiptMessage(entry.tenantId, entry.seq, entry.hash)),
    }),
    checkpoint: (c: Pick<SignedCheckpoint, 'tenantId' | 'seq' | 'hash' | 'at'>): SignedCheckpoint => ({
      ...c,
      keyId,
      signature: signed(checkpointMessage(c)),
    }),
  };
}
export type AuditSigner = ReturnType<typeof createAuditSigner>;

export type Verdict = { ok: true } | { ok: false; problem: string };

function keyFor(keys: AuditKeys, keyId: string): KeyObject | string {
  const k = keys.keys.find((x) => x.keyId === keyId);
  if (!k) return `it was signed with key ${keyId}, which the keys given do not hold`;
  try {
    const key = ed25519Public(k.publicKey, `key ${keyId}`);
    // The id is the key's own: a key file whose entry names another key's id is refused.
    return keyIdOf(key) === keyId ? key : `key ${keyId} in the keys given is another key (its id is ${keyIdOf(key)})`;
  } catch (err) {
    return `key ${keyId} in the keys given is unreadable: ${(err as Error).message}`;
  }
}

const signatureHolds = (key: KeyObject, message: Buffer, signature: string) => {
  try {
    return verify(null, message, key, Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
};

/** Checks a receipt offline: its entry hashes to its hash, names its seq, and the fleet's key signed that seq and hash. */
export function verifyReceipt(receipt: AuditReceipt, keys: AuditKeys): Verdict {
  const { entry } = receipt;
  if (entry.seq !== receipt.seq) return { ok: false, problem: `the receipt says entry ${receipt.seq} but holds entry ${entry.seq}` };
  if (entry.hash !== receipt.hash || auditHash(entry) !== receipt.hash)
    return { ok: false, problem: `entry ${receipt.seq} was altered (its hash does not match its content)` };
  const key = keyFor(keys, receipt.keyId);
  if (typeof key === 'string') return { ok: false, problem: key };
  if (!signatureHolds(key, receiptMessage(entry.tenantId, receipt.seq, receipt.hash), receipt.signature))
    return {
      ok: false,
      problem: `the signature does not verify: not signed by key ${receipt.keyId} for entry ${receipt.seq} of ${entry.tenantId}`,
    };
  return { ok: true };
}

/** Checks a checkpoint's signature offline. */
export function verifyCheckpoint(checkpoint: SignedCheckpoint, keys: AuditKeys): Verdict {
  const key = keyFor(keys, checkpoint.keyId);
  if (typeof key === 'string') return { ok: false, problem: key };
  if (!signatureHolds(key, checkpointMessage(checkpoint), checkpoint.signature))
    return { ok: false, problem: `the checkpoint's signature does not verify with key ${checkpoint.keyId}` };
  return { ok: true };
}

/**
 * Checks an exported log (every entry from the first, oldest first) against a checkpoint kept
 * outside Rein: the chain holds, belongs to the checkpoint's tenant, and still holds entry
 * `seq` with the checkpointed hash — a log cut back, or cut back and written again, does not.
 */
export function verifyLogAgainstCheckpoint(entries: readonly AuditEntry[], checkpoint: SignedCheckpoint): Verdict {
  const foreign = entries.find((e) => e.tenantId !== checkpoint.tenantId);
  if (foreign)
    return { ok: false, problem: `entry ${foreign.seq} is of tenant ${foreign.tenantId}, the checkpoint of ${checkpoint.tenantId}` };
  const chain = verifyAuditChain(entries, { seq: 1, prevHash: GENESIS_HASH });
  if (!chain.ok) return { ok: false, problem: `broken at entry ${chain.seq}: ${chain.problem}` };
  const kept = entries[checkpoint.seq - 1];
  if (!kept)
    return {
      ok: false,
      problem: `the log ends at entry ${entries.length}, before entry ${checkpoint.seq} of the checkpoint of ${checkpoint.at} (entries removed)`,
    };
  if (kept.hash !== checkpoint.hash)
    return {
      ok: false,
      problem: `entry ${checkpoint.seq} hashes to ${kept.hash}, not ${checkpoint.hash} as the checkpoint of ${checkpoint.at} says (the log was rewritten)`,
    };
  return { ok: true };
}
