import type { UIMessage } from 'ai';

/** Empty: the page's own origin (the dev server forwards `/v1` to the API). */
export const API_URL = (import.meta.env.VITE_REIN_API_URL ?? '').replace(/\/+$/, '');
export const AGENT = import.meta.env.VITE_REIN_AGENT ?? 'order-assistant';

/** What `start` and `finish` carry as the assistant message's metadata. */
export interface RunMetadata {
  runId?: string;
  sessionId?: string;
  status?: string;
  usage?: { totalTokens?: number };
}

/** A decision the caller may not make: the approval stays pending for someone who may. */
export interface ReinDecision {
  approvalId: string;
  code: string;
  message: string;
  status: string;
}

export type ChatMessage = UIMessage<RunMetadata, { 'rein-decision': ReinDecision }>;
export type ChatPart = ChatMessage['parts'][number];

export interface Me {
  tenantId: string;
  userId: string;
  roles: string[];
}

/** Who the key is (`GET /v1/me`), or null when the API does not know it. */
export async function whoAmI(key: string): Promise<Me | null> {
  const res = await fetch(`${API_URL}/v1/me`, { headers: { authorization: `Bearer ${key}` } });
  if (res.status === 401) return null;
  if (!res.ok) throw new Error(`the API answered ${res.status}`);
  return (await res.json()) as Me;
}
