import { z } from 'zod';
import { riskSchema, tenantRoleSchema } from './identity.js';
import { SCHEMA_VERSION } from './run.js';

export const approvalStatusSchema = z.enum(['pending', 'approved', 'rejected', 'expired', 'withdrawn']);
export type ApprovalStatus = z.infer<typeof approvalStatusSchema>;

export { type Risk, riskSchema } from './identity.js';

/** One approver's approval of a quorum approval (`quorum` ≥ 2); `arguments`: their edit, when they made one. */
export const approvalVoteSchema = z.object({
  by: z.string(),
  at: z.string(),
  comment: z.string().optional(),
  arguments: z.unknown().optional(),
});
export type ApprovalVote = z.infer<typeof approvalVoteSchema>;

/** Undecided after `afterMs`, the approval's `requiredRole` becomes `toRole` (never lower) and its expiry restarts. */
export const escalationSchema = z.object({ afterMs: z.number().int().positive(), toRole: tenantRoleSchema }).strict();
export type Escalation = z.infer<typeof escalationSchema>;

/**
 * What an app shows approvers beside an approval (`approval({...}).context` in `defineTool`):
 * the customer, the order, the amount — a few short fields, kept with the approval.
 */
export const approvalContextSchema = z
  .record(z.string().min(1).max(64), z.union([z.string().max(500), z.number(), z.boolean()]))
  .refine((c) => Object.keys(c).length <= 20, 'at most 20 fields');
export type ApprovalContext = z.infer<typeof approvalContextSchema>;

export const approvalSchema = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  id: z.string(),
  /**
   * A tool call's approval, a plan-mode run's whole plan (`arguments` holds its steps), or
   * more budget for a run out of it (`budget`: `arguments` is a `BudgetRaise`), or a
   * question a call's work asks a person (`input`: a remote agent's, in `summary`;
   * `arguments` is the answer sent back, which an approver writes by editing them).
   */
  kind: z.enum(['tool', 'plan', 'budget', 'input']).optional(),
  runId: z.string(),
  /** A sub-agent's approval: the run that called the sub-agent, and the first run of the tree. */
  parentRunId: z.string().optional(),
  rootRunId: z.string().optional(),
  step: z.number().int().min(0),
  toolCallId: z.string(),
  tenantId: z.string(),
  requestedBy: z.string(),
  toolName: z.string(),
  /** The arguments as the model proposed them. */
  arguments: z.unknown(),
  /** An approver's edit of the arguments; what runs when present. */
  approvedArguments: z.unknown().optional(),
  editedBy: z.string().optional(),
  /**
   * The capability's binding: sha256 of the canonical JSON of the arguments that may
   * run, and the version of the tool's policy that judged them. The worker re-checks
   * both at execution.
   */
  argsHash: z.string().regex(/^[0-9a-f]{64}$/),
  policyVersion: z.number().int().min(1),
  summary: z.string(),
  /** The app's own fields for the approver (the tool's policy returned them). */
  context: approvalContextSchema.optional(),
  risk: riskSchema,
  requiredRole: tenantRoleSchema,
  status: approvalStatusSchema,
  createdAt: z.string(),
  expiresAt: z.string(),
  decidedBy: z.string().optional(),
  decidedAt: z.string().optional(),
  comment: z.string().optional(),
  /** Why a `withdrawn` approval was: `version_changed`, its tool changed when the run moved to another app version. */
  reason: z.enum(['version_changed']).optional(),
  /** The fingerprint of the tool's definition it was asked under (tools/tool-digest.ts): an upgrade keeps it only if unchanged. */
  toolDigest: z.string().optional(),
  /** Someone other than the requester must decide, even as proposed (a budget raise under REIN_BUDGET_FOUR_EYES). */
  fourEyes: z.literal(true).optional(),
  /** Distinct people (never the requester) who must approve; one rejection rejects. Absent: one decides. */
  quorum: z.number().int().min(2).optional(),
  /** The approvals so far of a quorum approval; an edit resets the others (they approved other arguments). */
  approvals: z.array(approvalVoteSchema).optional(),
  /** The next escalation, counted from `escalatedAt` (or `createdAt`). */
  escalate: escalationSchema.optional(),
  escalatedAt: z.string().optional(),
  /** Every escalation so far, oldest first. */
  escalations: z.array(z.object({ at: z.string(), from: tenantRoleSchema, to: tenantRoleSchema })).optional(),
});
export type Approval = z.infer<typeof approvalSchema>;

/** A `budget` approval's arguments: what the run's limits grow by if approved (an approver may edit them). */
export const budgetRaiseSchema = z
  .object({ extraTokens: z.number().int().min(0).max(100_000_000), extraCostUsd: z.number().min(0).max(1_000_000) })
  .strict();
export type BudgetRaise = z.infer<typeof budgetRaiseSchema>;

export const approveBodySchema = z
  .object({
    comment: z.string().max(2000).optional(),
    /** Approve with edits: replaces the arguments; validated and judged again. */
    arguments: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type ApproveBody = z.infer<typeof approveBodySchema>;
/** `POST /v1/approvals/:id/preview`: the edit to judge (none: the approval as it stands). Decides nothing. */
export const previewBodySchema = approveBodySchema.pick({ arguments: true });
export type PreviewBody = z.infer<typeof previewBodySchema>;
export const rejectBodySchema = z.object({ reason: z.string().min(1).max(2000) }).strict();

/** `POST /v1/approvals/:id/links`: for the caller, or (a tenant admin) for `userId`. */
export const createLinksBodySchema = z.object({ userId: z.string().min(1).max(128).optional() }).strict();
export type CreateLinksBody = z.infer<typeof createLinksBodySchema>;
/** Single-use links deciding as one user; `GET` shows a confirmation page, only `POST` decides. */
export const approvalLinksSchema = z.object({ approveUrl: z.string(), rejectUrl: z.string(), expiresAt: z.string() });
export type ApprovalLinks = z.infer<typeof approvalLinksSchema>;
