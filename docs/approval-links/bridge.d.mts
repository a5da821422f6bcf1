export interface BridgeOptions {
  secret: string;
  approverUrl: string;
  adminKey: string;
  approvers: string[];
  chatUrl: string;
  port?: number;
  host?: string;
}
export function startBridge(opts: BridgeOptions): Promise<{ url: string; close: () => void }>;
export function chatMessage(
  data: Record<string, unknown>,
  links: Array<{ userId: string; approveUrl: string; rejectUrl: string; expiresAt: string }>,
): { text: string; approvalId: unknown; links: unknown[] };
