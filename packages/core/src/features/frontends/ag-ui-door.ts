import type { Principal } from '@rein/contract';
import { runOfApproval } from '../../policy/approvals/approval-id.js';
import { type AgUiEvent, createAgUiStream } from '../../policy/frontends/ag-ui-stream.js';
import { contentText, type RunAgentInput } from '../../policy/frontends/protocol-bodies.js';
import { InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import type { DoorRuns, DoorStream, Segment } from './door-runs.js';

/**
 * `POST /v1/ag-ui/:agent`, AG-UI 1.0: a `RunAgentInput` whose last message is the user's
 * starts a run of the thread's session (`threadId` is the `sessionId`); one with `resume`
 * decides the interrupts it answers (approvals) and streams the continuation. Each request
 * is one AG-UI run; a park ends it with an `interrupt` outcome.
 */
export function createAgUiDoor(door: DoorRuns) {
  const segment = (input: RunAgentInput, reinRunId: string) => {
    const ag = createAgUiStream({ threadId: input.threadId, runId: input.runId, reinRunId });
    const s: Segment<AgUiEvent> = {
      start: () => ag.start(),
      translate: (entry, quiet) => ag.translate(entry, quiet),
      end: () => ag.end('ended'),
    };
    return { ag, s };
  };

  return {
    async run(principal: Principal, agent: string, input: RunAgentInput): Promise<DoorStream> {
      const resume = input.resume ?? [];
      if (resume.length > 0) {
        // Resolved and approved runs the call (with `arguments`, edited); anything else rejects it.
        const decisions = resume.map((r) => ({
          approvalId: r.interruptId,
          approve: r.status === 'resolved' && r.payload?.approved === true,
          ...(r.payload?.arguments ? { arguments: r.payload.arguments } : {}),
          ...(r.payload?.reason ? { reason: r.payload.reason } : r.status === 'cancelled' ? { reason: 'cancelled by the user' } : {}),
        }));
        const runId = runOfApproval(decisions[0]?.approvalId ?? '');
        if (!runId) throw new NotFoundError(`interrupt ${decisions[0]?.approvalId}`);
        return door.continued(
          principal,
          runId,
          () => door.decide(principal, agent, input.threadId, decisions),
          (_seen, acted) => {
            const { ag, s } = segment(input, runId);
            if (acted.pending.length === 0) return s;
            return {
              ...s,
              final: true,
              start: () => [
                ...ag.start(),
                ...acted.refusals.map((r) => ag.refused(r.approvalId, r.code, r.message)),
                ...ag.interrupted(acted.pending),
              ],
            };
          },
        );
      }
      const last = input.messages.at(-1);
      const text = last?.role === 'user' ? contentText(last.content).trim() : '';
      if (!text)
        throw new InvalidRequestError(
          'the last message must be a user message with text, or the input must resume interrupts',
          'ag_ui_message_required',
        );
      const run = await door.submit(principal, agent, text, input.threadId, `ag-ui:${input.threadId}:${input.runId}`);
      return door.fresh(principal, run.id, () => segment(input, run.id).s);
    },
  };
}

export type AgUiDoor = ReturnType<typeof createAgUiDoor>;
