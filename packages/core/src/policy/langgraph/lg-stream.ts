import type { RunEvent } from '@rein/contract';
import { NODES } from './lg-shapes.js';

/** The stream modes served: `messages-tuple` is sent as `messages` events, as LangGraph does. */
export const STREAM_MODES = ['values', 'updates', 'messages-tuple', 'events', 'custom'] as const;
export type StreamMode = (typeof STREAM_MODES)[number];

/** One server-sent event of a LangGraph stream. */
export interface LgStreamPart {
  event: string;
  data: unknown;
}

interface Ids {
  runId: string;
  threadId: string | null;
  assistantId: string;
}

const meta = (ids: Ids, event: RunEvent, node: string) => ({
  tags: [],
  run_id: ids.runId,
  thread_id: ids.threadId,
  assistant_id: ids.assistantId,
  langgraph_node: node,
  langgraph_step: event.step ?? 0,
});

/**
 * What one Rein run event (already PII-masked) is in the token-level modes: the model's
 * text as message chunks, tool results as tool messages, the run's life as LangChain
 * callback events, and the Rein event itself as `custom`. `values` and `updates` need
 * the run's state and are built where it is read.
 */
export function eventParts(event: RunEvent, modes: ReadonlySet<StreamMode>, ids: Ids): LgStreamPart[] {
  const parts: LgStreamPart[] = [];
  const d = event.data as Record<string, unknown>;
  const messageId = `${ids.runId}:${event.step ?? 0}`;
  if (modes.has('messages-tuple')) {
    if (event.type === 'model.delta' && (typeof d.text === 'string' || Array.isArray(d.toolCalls))) {
      const calls = Array.isArray(d.toolCalls) ? (d.toolCalls as Array<Record<string, unknown>>) : [];
      parts.push({
        event: 'messages',
        data: [
          {
            type: 'AIMessageChunk',
            id: messageId,
            content: typeof d.text === 'string' ? d.text : '',
            tool_call_chunks: calls.map((c) => ({
              index: c.index,
              id: c.id,
              name: c.name,
              args: c.arguments ?? '',
              type: 'tool_call_chunk',
            })),
          },
          meta(ids, event, NODES.agent),
        ],
      });
    }
    if (event.type === 'tool.result')
      parts.push({
        event: 'messages',
        data: [
          {
            type: 'tool',
            id: `${messageId}:${String(d.toolCallId)}`,
            content: d.observation,
            tool_call_id: d.toolCallId,
            name: d.name,
            status: d.outcome === 'ok' ? 'success' : 'error',
          },
          meta(ids, event, NODES.tools),
        ],
      });
  }
  if (modes.has('events')) {
    const callback = (name: string, kind: string, data: unknown) => ({
      event: 'events',
      data: { event: kind, name, run_id: ids.runId, tags: [], metadata: meta(ids, event, name), data },
    });
    if (event.type === 'step.started') parts.push(callback(NODES.agent, 'on_chain_start', {}));
    if (event.type === 'model.delta') parts.push(callback(NODES.agent, 'on_chat_model_stream', { chunk: { content: d.text ?? '' } }));
    if (event.type === 'tool.called') parts.push(callback(String(d.name ?? NODES.tools), 'on_tool_start', {}));
    if (event.type === 'tool.result')
      parts.push(callback(String(d.name), 'on_tool_end', { input: d.arguments, output: d.observation, outcome: d.outcome }));
    if (event.type === 'step.finished') parts.push(callback(NODES.agent, 'on_chain_end', { outcome: d.outcome }));
  }
  if (modes.has('custom')) parts.push({ event: 'custom', data: event });
  return parts;
}
