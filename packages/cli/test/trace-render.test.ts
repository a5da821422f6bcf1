import type { RunEvent } from '@rein/client';
import { describe, expect, it } from 'vitest';
import { createTraceRenderer, ENGLISH_LABELS, type TraceLabels } from '../src/trace-render.js';

const at = '2026-01-01T00:00:00.000Z';
const ev = (e: Omit<RunEvent, 'runId' | 'at'>) => ({ runId: 'r-1', at, ...e }) as RunEvent;
const delta = (data: object) => ev({ type: 'model.delta', step: 0, data } as never);

function render(events: RunEvent[], labels?: TraceLabels) {
  const lines: string[] = [];
  const r = createTraceRenderer((l) => lines.push(l), labels);
  for (const e of events) r(e);
  return lines.join('\n').split('\n');
}

describe('the trace renderer', () => {
  it('prints a tool call once, by name, and its arguments whole on the Action line — never piece by piece', () => {
    const lines = render([
      delta({ toolCalls: [{ index: 0, id: 'c1', name: 'query_order', arguments: '{"ord' }] }),
      delta({ toolCalls: [{ index: 0, arguments: 'erNo":"20' }] }),
      delta({ toolCalls: [{ index: 0, arguments: '24001"}' }] }),
      ev({
        type: 'tool.result',
        step: 0,
        data: {
          toolCallId: 'c1',
          name: 'query_order',
          arguments: { orderNo: '2024001' },
          outcome: 'ok',
          observation: '{"status":"not_shipped"}',
        },
      }),
      ev({ type: 'step.finished', step: 0, data: { outcome: 'continued', thought: null } }),
    ]);
    expect(lines.filter((l) => l.startsWith('[Writing]'))).toEqual(['[Writing]  → query_order(…)']);
    expect(lines.some((l) => /erNo|24001"\}/.test(l) && l.startsWith('[Writing]'))).toBe(false);
    expect(lines).toContain('[Action ]  query_order(orderNo="2024001")');
    expect(lines).toContain('--- step 1 ---');
  });

  it('never glues the text the model writes to the call that follows it', () => {
    const lines = render([
      delta({ text: 'I will look the order ' }),
      delta({ text: 'up first.', toolCalls: [{ index: 0, id: 'c1', name: 'query_order', arguments: '{}' }] }),
      ev({ type: 'step.finished', step: 0, data: { outcome: 'continued' } }),
    ]);
    expect(lines.filter((l) => l.startsWith('[Writing]'))).toEqual([
      '[Writing]  I will look the order up first.',
      '[Writing]  → query_order(…)',
    ]);
  });

  it('speaks plain English by default and the labels it is given otherwise', () => {
    const answered = [ev({ type: 'step.finished', step: 1, data: { outcome: 'answered' } })];
    const english = render(answered);
    expect(english).toEqual(['--- step 2 ---', `[Action ]  ${ENGLISH_LABELS.answers}`]);
    expect(english.join('\n')).not.toMatch(/[\u4e00-\u9fff]/);
    const french = render(answered, { ...ENGLISH_LABELS, step: (n) => `étape ${n}`, answers: 'réponse finale' });
    expect(french).toEqual(['--- étape 2 ---', '[Action ]  réponse finale']);
  });

  it("prints a sub-agent's steps under its own run and step numbers, not the parent's", () => {
    const lines: string[] = [];
    const r = createTraceRenderer((l) => lines.push(l), ENGLISH_LABELS, 'parent-1');
    const of = (runId: string, e: Omit<RunEvent, 'runId' | 'at'>) => ({ runId, at, ...e }) as RunEvent;
    r(of('parent-1', { type: 'step.finished', step: 0, data: { outcome: 'waiting', thought: 'asking refunds' } } as never));
    r(of('child-12345678', { type: 'step.finished', step: 0, data: { outcome: 'answered' } } as never));
    r(of('child-12345678', { type: 'run.finished', data: { status: 'succeeded' } } as never));
    r(of('parent-1', { type: 'step.finished', step: 1, data: { outcome: 'answered' } } as never));
    const text = lines.join('\n').split('\n');
    expect(text).toEqual([
      '--- step 1 ---',
      '[Thought]  asking refunds',
      '    ↳ --- sub-agent run child-12 · step 1 ---',
      '    ↳ [Action ]  none → final answer',
      '    ↳ (sub-agent run child-12 succeeded)',
      '--- step 2 ---',
      '[Action ]  none → final answer',
    ]);
  });
});
