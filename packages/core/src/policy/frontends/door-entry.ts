import type { RunEvent, Usage } from '@rein/contract';

/** What a door shows of a pending approval: enough for an approval card or an interrupt. */
export interface ApprovalFacts {
  id: string;
  toolCallId: string;
  toolName: string;
  arguments: unknown;
  summary: string;
  expiresAt: string;
  /** The JSON Schema of the tool's arguments, for a UI that offers an edit. */
  schema?: Record<string, unknown>;
}

/** One entry of a run's event stream as a door reads it: `approval` on `approval.requested`. */
export interface DoorEntry {
  id: string;
  event: RunEvent;
  approval?: ApprovalFacts;
}

/** What a translator gives back for one entry: the protocol's frames, and whether this segment of the run ends here. */
export interface Translated<F> {
  frames: F[];
  last: boolean;
}

export const addUsage = (a: Usage, b: Partial<Usage> | undefined): Usage => ({
  promptTokens: a.promptTokens + (b?.promptTokens ?? 0),
  completionTokens: a.completionTokens + (b?.completionTokens ?? 0),
  totalTokens: a.totalTokens + (b?.totalTokens ?? 0),
});

export const NO_USAGE: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/** The tool-call pieces a `model.delta` carries. */
export type CallPiece = { index: number; id?: string; name?: string; arguments?: string };

/** The text a tool call's observation preview shows (tool results stream as previews; the trace keeps them whole). */
export const observationOf = (data: Record<string, unknown>) => String(data.observation ?? '');
