import type { TerminalStatus, Usage } from '@rein/contract';
import { type ApprovalFacts, addUsage, type CallPiece, type DoorEntry, NO_USAGE, observationOf, type Translated } from './door-entry.js';
import { createSpokenSteps, createStepText, type TextPiece } from './step-text.js';

/** The AI SDK's UI message stream protocol this door speaks (AI SDK 6; the SSE header says `v1`). */
export const UI_MESSAGE_STREAM_VERSION = 'v1';

/** One chunk of the AI SDK's UI message stream (`UIMessageChunk`). */
export type UiChunk = { type: string } & Record<string, unknown>;

/** A decision a chat asked for that was not made (the caller may not decide it): the approval stays pending. */
export interface Refusal {
  approvalId: string;
  code: string;
  message: string;
}

/** The AI SDK's finish reason of each ending (every ending named, so a new one is placed here by the compiler). */
const UI_FINISH: Record<TerminalStatus, 'stop' | 'error' | 'other'> = {
  succeeded: 'stop',
  failed: 'error',
  cancelled: 'other',
};

/**
 * Turns one run's events into the AI SDK's UI message stream: one assistant message per
 * run (its id is the run id), a step per Rein step, the step's thought as reasoning and its
 * answer as text, a tool part per call, a `tool-approval-request` per parked call whose
 * `approvalId` is the Rein approval id. Pure: the door feeds it entries and writes what it gives back.
 */
export function createUiMessageStream(run: { id: string; sessionId?: string | undefined }) {
  let stepOpen = false;
  /** The Rein step the open step is (a retried step job announces its step again). */
  let stepIndex: number | undefined;
  let stepCalls = new Map<number, string>();
  let calledTools = false;
  let text = createStepText();
  const spoken = createSpokenSteps();
  let part: { kind: TextPiece['kind']; id: string } | undefined;
  let parts = 0;
  let usage: Usage = NO_USAGE;
  const tools = new Map<string, { name: string; available: boolean }>();

  const closePart = (): UiChunk[] => {
    if (!part) return [];
    const end = { type: `${part.kind}-end`, id: part.id };
    part = undefined;
    return [end];
  };
  const write = (pieces: TextPiece[]): UiChunk[] =>
    pieces.flatMap((p) => {
      const out: UiChunk[] = [];
      if (part?.kind !== p.kind) {
        out.push(...closePart());
        part = { kind: p.kind, id: `${p.kind}-${++parts}` };
        out.push({ type: `${p.kind}-start`, id: part.id });
      }
      out.push({ type: `${p.kind}-delta`, id: part.id, delta: p.delta });
      return out;
    });
  const openStep = (index?: number): UiChunk[] => {
    if (stepOpen) return [];
    stepOpen = true;
    stepIndex = index;
    stepCalls = new Map();
    calledTools = false;
    text = createStepText();
    return [{ type: 'start-step' }];
  };
  const closeStep = (fallback?: string | null): UiChunk[] => {
    if (!stepOpen) return [];
    stepOpen = false;
    return [...write(text.end(calledTools, spoken.fallback(stepIndex, fallback))), ...closePart(), { type: 'finish-step' }];
  };
  const startCall = (toolCallId: string, toolName: string): UiChunk[] => {
    if (tools.has(toolCallId)) return [];
    tools.set(toolCallId, { name: toolName, available: false });
    calledTools = true;
    return [...write(text.toolCall()), ...closePart(), { type: 'tool-input-start', toolCallId, toolName }];
  };
  /** The call's whole input, once known (its result or its approval carries it). */
  const inputOf = (toolCallId: string, toolName: string, input: unknown): UiChunk[] => {
    const out = startCall(toolCallId, toolName);
    const tool = tools.get(toolCallId);
    if (tool && !tool.available) {
      tool.available = true;
      out.push({ type: 'tool-input-available', toolCallId, toolName: tool.name, input: input ?? {} });
    }
    return out;
  };
  const metadata = (status: string) => ({ runId: run.id, ...(run.sessionId ? { sessionId: run.sessionId } : {}), status, usage });

  function translate(entry: DoorEntry): Translated<UiChunk> {
    const { event } = entry;
    const data = event.data;
    // A sub-agent's events are copied into its parent's stream: the chat shows this run's own.
    if (event.runId !== run.id) return { frames: [], last: false };
    switch (event.type) {
      case 'step.started': {
        if (stepOpen && stepIndex === event.step) return { frames: [], last: false };
        return { frames: [...closeStep(), ...openStep(event.step)], last: false };
      }
      case 'model.delta': {
        const out = openStep(event.step);
        if (typeof data.text === 'string') out.push(...write(text.text(data.text)));
        for (const piece of (data.toolCalls ?? []) as CallPiece[]) {
          if (piece.id && piece.name) {
            stepCalls.set(piece.index, piece.id);
            out.push(...startCall(piece.id, piece.name));
          }
          const id = stepCalls.get(piece.index);
          if (id && piece.arguments && !tools.get(id)?.available)
            out.push({ type: 'tool-input-delta', toolCallId: id, inputTextDelta: piece.arguments });
        }
        return { frames: out, last: false };
      }
      case 'tool.result': {
        const id = String(data.toolCallId);
        const out = [...openStep(event.step), ...inputOf(id, String(data.name), data.arguments)];
        const outcome = String(data.outcome);
        if (outcome === 'ok') out.push({ type: 'tool-output-available', toolCallId: id, output: observationOf(data) });
        else if (outcome === 'rejected') out.push({ type: 'tool-output-denied', toolCallId: id });
        else if (outcome !== 'awaiting_approval' && outcome !== 'awaiting_child')
          out.push({ type: 'tool-output-error', toolCallId: id, errorText: `${outcome}: ${observationOf(data)}` });
        return { frames: out, last: false };
      }
      case 'approval.requested': {
        const a = entry.approval;
        if (!a) return { frames: [], last: false };
        return { frames: [...openStep(event.step), ...approvalRequest(a)], last: false };
      }
      case 'step.finished': {
        usage = addUsage(usage, data.usage as Partial<Usage> | undefined);
        const thought = typeof data.thought === 'string' ? data.thought : null;
        if (data.outcome !== 'answered') calledTools ||= data.outcome !== 'output_repair';
        const out = closeStep(thought);
        if (data.outcome !== 'parked') return { frames: out, last: false };
        out.push({ type: 'finish', finishReason: 'tool-calls', messageMetadata: metadata('pending_approval') });
        return { frames: out, last: true };
      }
      case 'run.finished': {
        const out = closeStep();
        const status = String(data.status);
        if (status === 'failed') out.push({ type: 'error', errorText: `${String(data.reason)}: the run failed` });
        if (status === 'cancelled') out.push({ type: 'abort', reason: String(data.reason ?? 'cancelled') });
        const finishReason = UI_FINISH[status as TerminalStatus] ?? 'other';
        out.push({ type: 'finish', finishReason, messageMetadata: metadata(status) });
        return { frames: out, last: true };
      }
      default:
        return { frames: [], last: false };
    }
  }

  function approvalRequest(a: ApprovalFacts): UiChunk[] {
    return [
      ...inputOf(a.toolCallId, a.toolName, a.arguments),
      { type: 'tool-approval-request', approvalId: a.id, toolCallId: a.toolCallId },
    ];
  }

  return {
    /** The message's first chunk: its id is the run's, so a continuation or a replay lands on the same message. */
    start(): UiChunk[] {
      return [{ type: 'start', messageId: run.id, messageMetadata: metadata('running') }];
    },
    translate,
    /**
     * Decisions that were refused: said as a data part each, and the approvals asked again
     * so the chat shows them pending (and does not send the same answer again by itself).
     */
    refused(refusals: Refusal[], pending: ApprovalFacts[]): UiChunk[] {
      return [
        ...refusals.map((r) => ({ type: 'data-rein-decision', id: r.approvalId, data: { ...r, status: 'pending' } })),
        ...pending.flatMap(approvalRequest),
        { type: 'finish', finishReason: 'tool-calls', messageMetadata: metadata('pending_approval') },
      ];
    },
    /** The stream stopped before the run said how this segment ended (the run ended with nothing more to read). */
    end(status: string): UiChunk[] {
      return [...closeStep(), { type: 'finish', finishReason: 'other', messageMetadata: metadata(status) }];
    },
  };
}

export type UiMessageStream = ReturnType<typeof createUiMessageStream>;
