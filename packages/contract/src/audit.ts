import { z } from 'zod';

/** What a decision-log entry records: every governance event, named once. */
export const auditActionSchema = z.enum([
  'approval.requested',
  /** One approval of a quorum that still needs more. */
  'approval.voted',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.escalated',
  'approval.withdrawn',
  'run.cancelled',
  /** A run's limits grown by an approved `budget` approval (the daily quota never is). */
  'run.budget_raised',
  'compensation.requested',
  'webhook.created',
  'webhook.deleted',
  'schedule.created',
  /** An edit; by someone other than its owner, the editor becomes the owner (`data.previousOwner`). */
  'schedule.updated',
  'schedule.deleted',
  /** Stopped by a firing: its owner's key is gone or lost a role the schedule runs with. */
  'schedule.paused',
  /** Fleet-wide, logged to the deciding operator's tenant: new runs go to this app version. */
  'version.promoted',
  /** Fleet-wide, logged to the deciding operator's tenant: unfinished runs of one app version moved to another. */
  'version.upgraded',
]);
export type AuditAction = z.infer<typeof auditActionSchema>;

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * One entry of a tenant's decision log, a hash chain: `hash` is the sha256 of the canonical
 * JSON (keys sorted) of the entry without `hash`, and `prevHash` is the previous entry's
 * `hash` (64 zeros for the first). Altering, removing or reordering an entry breaks the chain.
 * Open: a field added to a stored entry is kept (and breaks its hash), never dropped.
 */
export const auditEntrySchema = z.looseObject({
  seq: z.number().int().min(1),
  at: z.string(),
  tenantId: z.string(),
  /** Who did it: a user id, or `system` (expiry, escalation). */
  actor: z.string(),
  action: auditActionSchema,
  subject: z.object({
    runId: z.string().optional(),
    approvalId: z.string().optional(),
    webhookId: z.string().optional(),
    scheduleId: z.string().optional(),
  }),
  data: z.record(z.string(), z.unknown()).optional(),
  prevHash: sha256Hex,
  hash: sha256Hex,
});
export type AuditEntry = z.infer<typeof auditEntrySchema>;

/** `GET /v1/audit`: entries from `from` to `to` (ISO instants, inclusive), oldest first, after `cursor`. */
export const auditQuerySchema = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    cursor: z
      .string()
      .regex(/^\d{1,15}$/, 'a cursor of this endpoint')
      .optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(200),
  })
  .strict();
export type AuditQuery = z.infer<typeof auditQuerySchema>;

export const auditPageSchema = z.object({
  entries: z.array(auditEntrySchema),
  /** The chain's last entry when the page was read: a verifier that stops short of it was given a truncated log. */
  head: z.object({ seq: z.number().int().min(0), hash: sha256Hex }),
  /**
   * With the archive on: the latest head copied out of Redis (`at`: when). The chain must
   * still hold that entry; one that ends before it or differs there was truncated.
   */
  checkpoint: z.object({ seq: z.number().int().min(1), hash: sha256Hex, at: z.string() }).optional(),
  nextCursor: z.string().optional(),
});
export type AuditPage = z.infer<typeof auditPageSchema>;

/**
 * A decision's receipt: its log entry, where it sits in the chain, and an Ed25519 signature
 * (base64url) by the fleet's audit key `keyId` over `rein.audit.receipt.v1`, the tenant, the
 * seq and the hash, one per line. Verifiable offline with the public keys of `GET /v1/audit/keys`:
 * the entry's hash recomputed, then the signature.
 */
export const auditReceiptSchema = z.object({
  entry: auditEntrySchema,
  seq: z.number().int().min(1),
  hash: sha256Hex,
  keyId: z.string().min(1).max(64),
  signature: z.string().min(1).max(200),
});
export type AuditReceipt = z.infer<typeof auditReceiptSchema>;

/** `GET /v1/audit/keys`: the fleet's audit public keys (SPKI PEM), the signing one and those retired that still verify. */
export const auditKeysSchema = z.object({
  keys: z.array(
    z.object({
      keyId: z.string(),
      algorithm: z.literal('Ed25519'),
      publicKey: z.string(),
      status: z.enum(['active', 'retired']),
    }),
  ),
});
export type AuditKeys = z.infer<typeof auditKeysSchema>;

/**
 * A tenant's chain head as signed and written outside Redis (the archive, the checkpoint
 * sink): the signature covers `rein.audit.checkpoint.v1`, the tenant, seq, hash and `at`.
 * A log that no longer holds entry `seq` with this `hash` was cut back or rewritten.
 */
export const signedCheckpointSchema = z.object({
  tenantId: z.string(),
  seq: z.number().int().min(1),
  hash: sha256Hex,
  at: z.string(),
  keyId: z.string().min(1).max(64),
  signature: z.string().min(1).max(200),
});
export type SignedCheckpoint = z.infer<typeof signedCheckpointSchema>;

/** What a writer records; the log adds `seq`, `at`, `prevHash` and `hash`. */
export interface AuditRecord {
  tenantId: string;
  actor: string;
  action: AuditAction;
  subject: AuditEntry['subject'];
  data?: Record<string, unknown>;
}
