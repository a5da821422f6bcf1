import { z } from 'zod';
import { roleSchema } from './identity.js';
import { SCHEMA_VERSION } from './run.js';

export const approvalStatusSchema = z.enum(['pending', 'approved', 'rejected', 'expired', 'withdrawn']);
export type ApprovalStatus = z.infer<typeof approvalStatusSchema>;

export const riskSchema = z.enum(['high', 'critical']);
export type Risk = z.infer<typeof riskSchema>;

export const approvalSchema = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  id: z.string(),
  runId: z.string(),
  step: z.number().int().min(0),
  toolCallId: z.string(),
  tenantId: z.string(),
  requestedBy: z.string(),
  toolName: z.string(),
  arguments: z.unknown(),
  summary: z.string(),
  risk: riskSchema,
  requiredRole: roleSchema,
  status: approvalStatusSchema,
  createdAt: z.string(),
  expiresAt: z.string(),
  decidedBy: z.string().optional(),
  decidedAt: z.string().optional(),
  comment: z.string().optional(),
});
export type Approval = z.infer<typeof approvalSchema>;

export const approveBodySchema = z.object({ comment: z.string().max(2000).optional() }).strict();
export const rejectBodySchema = z.object({ reason: z.string().min(1).max(2000) }).strict();
