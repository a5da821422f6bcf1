import type { Principal } from '@rein/contract';
import { runOfApproval } from '../../policy/approvals/approval-id.js';
import type { ChatRequest, UiPart } from '../../policy/frontends/protocol-bodies.js';
import { createUiMessageStream, UI_MESSAGE_STREAM_VERSION, type UiChunk } from '../../policy/frontends/ui-message-stream.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import type { DoorRuns, DoorStream, Segment } from './door-runs.js';

/** A run the chat can still follow: a reconnect replays it; a parked or finished one has nothing more to stream. */
const LIVE = new Set(['queued', 'running', 'waiting']);

/** A chat send: the stream, and what to do when the client goes away before it ends. */
export interface ChatSend extends DoorStream {
  runId: string;
  /** Set when the request asked for it (`cancelOnAbort`): cancels the run. */
  onAbort?: () => Promise<void>;
}

/**
 * `POST /v1/chat/:agent`, the AI SDK's UI message stream: a user message starts a run of
 * the chat's session (the chat id is the `sessionId`); an assistant message carrying
 * `approval-responded` parts decides those approvals and streams the run on. Only the last
 * message is read: the history is the session's, kept by Rein, so an edited earlier turn
 * changes nothing the model sees.
 */
export function createChatDoor(door: DoorRuns) {
  const segment = (run: { id: string; sessionId: string }): Segment<UiChunk> & { ui: ReturnType<typeof createUiMessageStream> } => {
    const ui = createUiMessageStream(run);
    return {
      ui,
      headers: { 'x-vercel-ai-ui-message-stream': UI_MESSAGE_STREAM_VERSION },
      start: () => ui.start(),
      translate: (entry) => ui.translate(entry),
      end: () => ui.end('ended'),
      trailer: ['[DONE]'],
    };
  };

  const cancelling = (principal: Principal, runId: string, wanted: boolean | undefined) =>
    wanted
      ? {
          onAbort: () =>
            door
              .cancel(principal, runId)
              .then(() => undefined)
              .catch((err) => {
                if (!(err instanceof ConflictError)) throw err; // finished meanwhile
              }),
        }
      : {};

  return {
    async send(principal: Principal, agent: string, body: ChatRequest): Promise<ChatSend> {
      if (body.trigger === 'regenerate-message')
        throw new InvalidRequestError(
          'regenerating an answer is not supported: a run cannot be taken back; send a new message',
          'chat_regenerate_unsupported',
        );
      const last = body.messages.at(-1) as ChatRequest['messages'][number];
      const answers = last.role === 'assistant' ? last.parts.filter(isApprovalAnswer) : [];
      if (answers.length > 0) {
        const decisions = answers.map((p) => ({
          approvalId: p.approval.id,
          approve: p.approval.approved,
          ...(p.approval.reason ? { reason: p.approval.reason } : {}),
        }));
        const runId = runOfApproval(decisions[0]?.approvalId ?? '');
        if (!runId) throw new NotFoundError(`approval ${decisions[0]?.approvalId}`);
        const stream = await door.continued(
          principal,
          runId,
          () => door.decide(principal, agent, body.id, decisions),
          (_seen, acted) => {
            const s = segment({ id: runId, sessionId: body.id });
            if (acted.pending.length === 0) return s;
            return { ...s, final: true, start: () => [...s.ui.start(), ...s.ui.refused(acted.refusals, acted.pending)] };
          },
        );
        return { ...stream, runId, ...cancelling(principal, runId, body.cancelOnAbort) };
      }
      const input = last.role === 'user' ? textOf(last.parts) : '';
      if (!input)
        throw new InvalidRequestError(
          'the last message must be a user message with text, or an assistant message answering approvals',
          'chat_message_required',
        );
      const run = await door.submit(principal, agent, input, body.id, `chat:${body.id}:${last.id}`);
      const stream = await door.fresh(principal, run.id, () => segment({ id: run.id, sessionId: body.id }));
      return { ...stream, runId: run.id, ...cancelling(principal, run.id, body.cancelOnAbort) };
    },

    /** `GET /v1/chat/:agent/:id/stream` (the transport's resume): the chat's live run replayed from its start; none: 204. */
    async reconnect(principal: Principal, agent: string, chatId: string): Promise<DoorStream | null> {
      const run = await door.latestRun(principal, chatId);
      if (!run || run.agent !== agent || !LIVE.has(run.status)) return null;
      return door.fresh(principal, run.id, () => segment({ id: run.id, sessionId: chatId }));
    },
  };
}

export type ChatDoor = ReturnType<typeof createChatDoor>;

type ApprovalAnswer = UiPart & { approval: { id: string; approved: boolean; reason?: string } };

const isApprovalAnswer = (p: UiPart): p is ApprovalAnswer =>
  p.state === 'approval-responded' && typeof p.approval?.approved === 'boolean' && typeof p.approval.id === 'string';

const textOf = (parts: UiPart[]) =>
  parts
    .flatMap((p) => (p.type === 'text' && typeof p.text === 'string' ? [p.text] : []))
    .join('\n')
    .trim();
