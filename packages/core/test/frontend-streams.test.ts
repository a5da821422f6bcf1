import type { RunEvent } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { createAgUiStream } from '../src/policy/frontends/ag-ui-stream.js';
import type { DoorEntry } from '../src/policy/frontends/door-entry.js';
import { createStepText } from '../src/policy/frontends/step-text.js';
import { createUiMessageStream } from '../src/policy/frontends/ui-message-stream.js';

const RUN = '00000000-0000-4000-8000-000000000001';
let seq = 0;
const entry = (
  type: RunEvent['type'],
  step: number | undefined,
  data: Record<string, unknown>,
  extra: Partial<DoorEntry> = {},
): DoorEntry => ({
  id: `1-${seq++}`,
  event: { type, runId: RUN, ...(step === undefined ? {} : { step }), at: '2026-01-01T00:00:00.000Z', data },
  ...extra,
});
const approval = {
  id: `${RUN}.0.0`,
  toolCallId: 'call_1',
  toolName: 'create_ticket',
  arguments: { orderNo: '2024001' },
  summary: 'Open a ticket',
  expiresAt: '2026-01-01T00:15:00.000Z',
  schema: { type: 'object' },
};
/** A step that thinks, calls a gated write and parks; then the resumed step runs it and answers. */
const parkedThenAnswered = () => [
  entry('step.started', 0, {}),
  entry('model.delta', 0, {
    text: 'Open a ticket.',
    toolCalls: [{ index: 0, id: 'call_1', name: 'create_ticket', arguments: '{"orderNo":' }],
  }),
  entry('model.delta', 0, { toolCalls: [{ index: 0, arguments: '"2024001"}' }] }),
  entry('tool.result', 0, {
    toolCallId: 'call_1',
    name: 'create_ticket',
    arguments: { orderNo: '2024001' },
    outcome: 'awaiting_approval',
    observation: '',
  }),
  entry('approval.requested', 0, { approvalId: approval.id, toolName: 'create_ticket' }, { approval }),
  entry('step.finished', 0, {
    outcome: 'parked',
    thought: 'Open a ticket.',
    usage: { promptTokens: 5, completionTokens: 5, totalTokens: 10 },
  }),
  entry('approval.decided', 0, { approvalId: approval.id, status: 'approved' }),
  entry('step.started', 0, {}),
  entry('tool.result', 0, {
    toolCallId: 'call_1',
    name: 'create_ticket',
    arguments: { orderNo: '2024001' },
    outcome: 'ok',
    observation: 'T-1',
  }),
  // The resumed step commits the model's reply again, its thought included (nothing streams).
  entry('step.finished', 0, { outcome: 'continued', thought: 'Open a ticket.' }),
  entry('step.started', 1, {}),
  entry('model.delta', 1, { text: 'Ticket T-1 is open.' }),
  entry('step.finished', 1, {
    outcome: 'answered',
    thought: 'Ticket T-1 is open.',
    usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
  }),
  entry('run.finished', 1, { status: 'succeeded', reason: 'answered', finalAnswer: 'Ticket T-1 is open.' }),
];

describe('step text', () => {
  it('holds a short text until the step shows whether it was a thought or the answer', () => {
    const thought = createStepText(10);
    expect(thought.text('Look it up')).toEqual([]);
    expect(thought.toolCall()).toEqual([{ kind: 'reasoning', delta: 'Look it up' }]);
    expect(thought.text(' more')).toEqual([{ kind: 'reasoning', delta: ' more' }]);
    const answer = createStepText(10);
    expect(answer.text('Short')).toEqual([]);
    expect(answer.end(false)).toEqual([{ kind: 'text', delta: 'Short' }]);
    const long = createStepText(10);
    expect(long.text('A long answer that streams')).toEqual([{ kind: 'text', delta: 'A long answer that streams' }]);
    expect(long.text('!')).toEqual([{ kind: 'text', delta: '!' }]);
    // Nothing streamed (a model that does not stream): the committed thought is sent whole.
    expect(createStepText().end(true, 'thought')).toEqual([{ kind: 'reasoning', delta: 'thought' }]);
  });
});

describe('the UI message stream translation', () => {
  it('makes one message per run: reasoning, a tool part asked for approval, the park, then its output and the answer (the thought said once)', () => {
    const ui = createUiMessageStream({ id: RUN, sessionId: 'c1' });
    const all = parkedThenAnswered().map((e) => ui.translate(e));
    const parkAt = all.findIndex((t) => t.last);
    const chunks = all.flatMap((t) => t.frames);
    expect(all[parkAt]?.frames.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls' });
    expect(chunks.map((c) => c.type)).toEqual([
      'start-step',
      'reasoning-start',
      'reasoning-delta',
      'reasoning-end',
      'tool-input-start',
      'tool-input-delta',
      'tool-input-delta',
      'tool-input-available',
      'tool-approval-request',
      'finish-step',
      'finish',
      'start-step',
      'tool-output-available',
      'finish-step',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(chunks.find((c) => c.type === 'tool-approval-request')).toEqual({
      type: 'tool-approval-request',
      approvalId: approval.id,
      toolCallId: 'call_1',
    });
    expect(chunks.at(-1)).toMatchObject({ finishReason: 'stop', messageMetadata: { runId: RUN, usage: { totalTokens: 12 } } });
  });

  it('a failed run ends with an error chunk naming its reason; another run’s events are left out', () => {
    const ui = createUiMessageStream({ id: RUN });
    const child = entry('step.started', 0, {});
    child.event.runId = 'child';
    expect(ui.translate(child).frames).toEqual([]);
    const t = ui.translate(entry('run.finished', 0, { status: 'failed', reason: 'model_unavailable' }));
    expect(t.frames.map((c) => c.type)).toEqual(['error', 'finish']);
    expect(t.frames[0]).toMatchObject({ errorText: 'model_unavailable: the run failed' });
  });
});

describe('the AG-UI translation', () => {
  it('ends the first AG-UI run with an interrupt; a resumed one, translated after the quiet part, ends with success', () => {
    const events = parkedThenAnswered();
    const first = createAgUiStream({ threadId: 't', runId: 'r1', reinRunId: RUN });
    const out = events.map((e) => first.translate(e));
    const parkAt = out.findIndex((t) => t.last);
    const finished = out[parkAt]?.frames.at(-1);
    expect(finished).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: {
        type: 'interrupt',
        interrupts: [{ id: approval.id, reason: 'tool_approval', toolCallId: 'call_1', responseSchema: { type: 'object' } }],
      },
    });
    const second = createAgUiStream({ threadId: 't', runId: 'r2', reinRunId: RUN });
    for (const e of events.slice(0, parkAt + 1)) second.translate(e, true);
    const rest = events.slice(parkAt + 1).flatMap((e) => second.translate(e).frames);
    expect(rest.map((e) => e.type)).toEqual([
      // The call started and ended in the first AG-UI run; this one brings its result.
      'STEP_STARTED',
      'TOOL_CALL_RESULT',
      'STEP_FINISHED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
      'RUN_FINISHED',
    ]);
    // Usage of what this AG-UI run streamed only.
    expect(rest.at(-1)).toMatchObject({ outcome: { type: 'success' }, result: 'Ticket T-1 is open.', usage: [{ totalTokens: 2 }] });
  });
});
