import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { Risk, TenantRole } from '@rein/contract';
import type { McpToolOverride } from '@rein/define/internal';

export interface McpGovernance {
  kind: 'read' | 'write';
  /** Every write is approved by a person; `null` for reads. */
  approval: { risk: Risk; requiredRole: TenantRole } | null;
  honoursIdempotencyKey: boolean;
}

/**
 * How Rein governs an MCP tool: from the server's annotations, which are hints from a
 * party we do not control, so they only ever pick among safe defaults — anything not
 * marked read-only is a write behind an approval (destructive → critical, decided by a
 * supervisor), and a cut-off call is re-sent only when the server says the tool is
 * idempotent and the app vouches for it. The app's override has the last word. With
 * `trust: false` (the server's `trustAnnotations: false`) the hints count for nothing:
 * every tool is a critical write unless the app's override says otherwise, and the
 * app's `idempotent` alone decides re-sending.
 */
export function mcpGovernance(annotations: ToolAnnotations | undefined, override: McpToolOverride = {}, trust = true): McpGovernance {
  const hints = trust ? annotations : undefined;
  const kind = override.kind ?? (hints?.readOnlyHint === true ? 'read' : 'write');
  if (kind === 'read') return { kind, approval: null, honoursIdempotencyKey: true };
  // The spec's default for destructiveHint is true: only an explicit false lowers the risk.
  const risk = override.approval?.risk ?? (hints?.destructiveHint === false ? 'high' : 'critical');
  const requiredRole = override.approval?.requiredRole ?? (risk === 'critical' ? 'supervisor' : 'user');
  return {
    kind,
    approval: { risk, requiredRole },
    honoursIdempotencyKey: (trust ? hints?.idempotentHint === true : true) && override.idempotent === true,
  };
}
