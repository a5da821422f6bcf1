import { z } from 'zod';

/** The roles inside a tenant, in order of authority: what approvals require and escalate to. */
export const tenantRoleSchema = z.enum(['user', 'approver', 'supervisor', 'admin']);
export type TenantRole = z.infer<typeof tenantRoleSchema>;

/**
 * A key's roles: the tenant roles, and `operator`, which is fleet-wide (app versions, the
 * queue board) and outside the tenant order: it grants nothing inside a tenant, and no
 * tenant role grants it.
 */
export const roleSchema = z.enum([...tenantRoleSchema.options, 'operator']);
export type Role = z.infer<typeof roleSchema>;

/** Who is calling: always from an authenticated API key, never from model output. */
export const principalSchema = z.object({
  tenantId: z.string().min(1).max(128),
  userId: z.string().min(1).max(128),
  roles: z.array(roleSchema).min(1),
});
export type Principal = z.infer<typeof principalSchema>;

export const apiKeySchema = principalSchema.extend({ key: z.string().min(8) });
export type ApiKey = z.infer<typeof apiKeySchema>;

/** How much an approval of a call is at stake: `critical` needs four eyes (decision-rights.ts). */
export const riskSchema = z.enum(['high', 'critical']);
export type Risk = z.infer<typeof riskSchema>;
