import type { TerminalStatus, Usage } from '@rein/contract';
import { type ApprovalFacts, addUsage, type CallPiece, type DoorEntry, NO_USAGE, observationOf, type Translated } from './door-entry.js';
import { createSpokenSteps, createStepText, type TextPiece } from './step-text.js';

/** The AG-UI protocol version this door speaks. */
export const AG_UI_PROTOCOL_VERSION = '1.0';

/** One AG-UI event (`BaseEvent` and its kinds). */
export type AgUiEvent = { type: string } & Record<string, unknown>;

/** An AG-UI interrupt for a pending approval: the id is the approval id, the schema its tool's arguments. */
export const interruptOf = (a: ApprovalFacts) => ({
  id: a.id,
  reason: 'tool_approval',
  message: a.summary,
  toolCallId: a.toolCallId,
  ...(a.schema ? { responseSchema: a.schema } : {}),
  expiresAt: a.expiresAt,
  metadata: { toolName: a.toolName, arguments: a.arguments },
});

/** How each ending finishes an AG-UI run (every ending named, so a new one is placed here by the compiler). */
const AG_UI_ENDING: Record<TerminalStatus, 'success' | 'cancelled' | 'error'> = {
  succeeded: 'success',
  failed: 'error',
  cancelled: 'cancelled',
};

/**
 * Turns one segment of a run's events into AG-UI 1.0 events: the segment is one AG-UI run
 * (`RUN_STARTED` … `RUN_FINISHED`/`RUN_ERROR`); a Rein step is a step, its thought a
 * reasoning message and its answer a text message; a park ends the AG-UI run with an
 * `interrupt` outcome, one interrupt per pending approval. Pure, like the chat's translator.
 */
export function createAgUiStream(ids: { threadId: string; runId: string; reinRunId: string }) {
  let step: string | undefined;
  let stepIndex: number | undefined;
  const spoken = createSpokenSteps();
  let stepCalls = new Map<number, string>();
  let calledTools = false;
  let text = createStepText();
  let message: { kind: TextPiece['kind']; id: string } | undefined;
  let messages = 0;
  /** Usage of the steps this AG-UI run streamed (a resumed run reports only its own). */
  let usage: Usage = NO_USAGE;
  const calls = new Map<string, { ended: boolean }>();
  const interrupts: ApprovalFacts[] = [];
  const run = { threadId: ids.threadId, runId: ids.runId };

  const closeMessage = (): AgUiEvent[] => {
    if (!message) return [];
    const { kind, id } = message;
    message = undefined;
    return kind === 'text'
      ? [{ type: 'TEXT_MESSAGE_END', messageId: id }]
      : [
          { type: 'REASONING_MESSAGE_END', messageId: id },
          { type: 'REASONING_END', messageId: id },
        ];
  };
  const write = (pieces: TextPiece[]): AgUiEvent[] =>
    pieces.flatMap((p) => {
      const out: AgUiEvent[] = [];
      if (message?.kind !== p.kind) {
        out.push(...closeMessage(), ...endCalls());
        message = { kind: p.kind, id: `${ids.reinRunId}.${p.kind}.${++messages}` };
        const messageId = message.id;
        out.push(
          ...(p.kind === 'text'
            ? [{ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' }]
            : [
                { type: 'REASONING_START', messageId },
                { type: 'REASONING_MESSAGE_START', messageId, role: 'reasoning' },
              ]),
        );
      }
      out.push({ type: p.kind === 'text' ? 'TEXT_MESSAGE_CONTENT' : 'REASONING_MESSAGE_CONTENT', messageId: message.id, delta: p.delta });
      return out;
    });
  const endCalls = (): AgUiEvent[] =>
    [...calls].flatMap(([toolCallId, c]) => {
      if (c.ended) return [];
      c.ended = true;
      return [{ type: 'TOOL_CALL_END', toolCallId }];
    });
  const openStep = (index: number | undefined): AgUiEvent[] => {
    if (step !== undefined) return [];
    step = `step ${index ?? 0}`;
    stepIndex = index;
    stepCalls = new Map();
    calledTools = false;
    text = createStepText();
    return [{ type: 'STEP_STARTED', stepName: step }];
  };
  const closeStep = (fallback?: string | null): AgUiEvent[] => {
    if (step === undefined) return [];
    const out = [
      ...write(text.end(calledTools, spoken.fallback(stepIndex, fallback))),
      ...closeMessage(),
      ...endCalls(),
      { type: 'STEP_FINISHED', stepName: step },
    ];
    step = undefined;
    return out;
  };
  const startCall = (toolCallId: string, toolCallName: string): AgUiEvent[] => {
    if (calls.has(toolCallId)) return [];
    calledTools = true;
    const out = [...write(text.toolCall()), ...closeMessage()];
    calls.set(toolCallId, { ended: false });
    out.push({ type: 'TOOL_CALL_START', toolCallId, toolCallName });
    return out;
  };
  /** A call seen only whole (no streamed pieces): its arguments in one piece. */
  const wholeCall = (toolCallId: string, name: string, args: unknown): AgUiEvent[] => {
    if (calls.has(toolCallId)) return endCalls();
    return [...startCall(toolCallId, name), { type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(args ?? {}) }, ...endCalls()];
  };
  const tokenUsage = () => [{ inputTokens: usage.promptTokens, outputTokens: usage.completionTokens, totalTokens: usage.totalTokens }];
  /** Ends the AG-UI run waiting on these approvals: one interrupt each. */
  const interrupted = (pending: ApprovalFacts[]): AgUiEvent[] => [
    ...closeStep(),
    { type: 'RUN_FINISHED', ...run, outcome: { type: 'interrupt', interrupts: pending.map(interruptOf) }, usage: tokenUsage() },
  ];

  return {
    start(input?: unknown): AgUiEvent[] {
      return [{ type: 'RUN_STARTED', ...run, protocolVersion: AG_UI_PROTOCOL_VERSION, ...(input ? { input } : {}) }];
    },

    /** `quiet`: an entry an earlier AG-UI run already showed (read again to rebuild the state). */
    translate(entry: DoorEntry, quiet = false): Translated<AgUiEvent> {
      const { event } = entry;
      const data = event.data;
      if (event.runId !== ids.reinRunId) return { frames: [], last: false };
      switch (event.type) {
        case 'step.started':
          // A retried step job announces its step again: the same step goes on.
          if (step === `step ${event.step ?? 0}`) return { frames: [], last: false };
          return { frames: [...closeStep(), ...openStep(event.step)], last: false };
        case 'model.delta': {
          const out = openStep(event.step);
          if (typeof data.text === 'string') out.push(...write(text.text(data.text)));
          for (const piece of (data.toolCalls ?? []) as CallPiece[]) {
            if (piece.id && piece.name) {
              stepCalls.set(piece.index, piece.id);
              out.push(...startCall(piece.id, piece.name));
            }
            const id = stepCalls.get(piece.index);
            if (id && piece.arguments && !calls.get(id)?.ended)
              out.push({ type: 'TOOL_CALL_ARGS', toolCallId: id, delta: piece.arguments });
          }
          return { frames: out, last: false };
        }
        case 'tool.result': {
          const id = String(data.toolCallId);
          const out = [
            ...openStep(event.step),
            ...write(text.toolCall()),
            ...closeMessage(),
            ...wholeCall(id, String(data.name), data.arguments),
          ];
          const outcome = String(data.outcome);
          if (outcome !== 'awaiting_approval' && outcome !== 'awaiting_child')
            out.push({
              type: 'TOOL_CALL_RESULT',
              messageId: `${ids.reinRunId}.result.${id}`,
              toolCallId: id,
              role: 'tool',
              content: outcome === 'ok' ? observationOf(data) : `${outcome}: ${observationOf(data)}`,
            });
          return { frames: out, last: false };
        }
        case 'approval.requested':
          if (entry.approval) interrupts.push(entry.approval);
          return { frames: [], last: false };
        case 'approval.decided': {
          const at = interrupts.findIndex((a) => a.id === data.approvalId);
          if (at >= 0) interrupts.splice(at, 1);
          return { frames: [], last: false };
        }
        case 'step.finished': {
          if (!quiet) usage = addUsage(usage, data.usage as Partial<Usage> | undefined);
          if (data.outcome !== 'answered') calledTools ||= data.outcome !== 'output_repair';
          const out = closeStep(typeof data.thought === 'string' ? data.thought : null);
          if (data.outcome !== 'parked' || interrupts.length === 0) return { frames: out, last: false };
          out.push(...interrupted(interrupts));
          return { frames: out, last: true };
        }
        case 'run.finished': {
          const out = closeStep();
          const status = String(data.status);
          if (AG_UI_ENDING[status as TerminalStatus] === 'error')
            out.push({ type: 'RUN_ERROR', message: `the run failed: ${String(data.reason)}`, code: String(data.reason) });
          else
            out.push({
              type: 'RUN_FINISHED',
              ...run,
              ...(typeof data.finalAnswer === 'string' ? { result: data.finalAnswer } : {}),
              outcome: { type: AG_UI_ENDING[status as TerminalStatus] === 'cancelled' ? 'cancelled' : 'success' },
              usage: tokenUsage(),
            });
          return { frames: out, last: true };
        }
        default:
          return { frames: [], last: false };
      }
    },

    interrupted,

    /** A decision the caller may not make: said as a custom event; the interrupt stays. */
    refused(approvalId: string, code: string, text: string): AgUiEvent {
      return { type: 'CUSTOM', name: 'rein.decision_refused', value: { approvalId, code, message: text } };
    },

    /** The stream stopped with nothing more to read before the run said how it ended. */
    end(status: string): AgUiEvent[] {
      return [
        ...closeStep(),
        { type: 'RUN_FINISHED', ...run, outcome: { type: status === 'cancelled' ? 'cancelled' : 'success' }, usage: tokenUsage() },
      ];
    },
  };
}

export type AgUiStream = ReturnType<typeof createAgUiStream>;
