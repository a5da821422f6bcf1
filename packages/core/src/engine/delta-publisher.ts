import type { ModelDelta } from '../model/model-gateway.js';
import type { RunEvent } from '../schemas/event.js';
import { runEvent } from './run-event.js';

export interface DeltaBatching {
  /** A batch waits at most this long after its first piece. */
  intervalMs: number;
  /** A batch this large goes at once. */
  maxChars: number;
}

export const DEFAULT_DELTA_BATCHING: DeltaBatching = { intervalMs: 100, maxChars: 512 };

type ToolCallDelta = NonNullable<ModelDelta['toolCall']>;

/**
 * Publishes a streamed reply as `model.delta` events, batched (one event per interval or
 * `maxChars`, never one per token) so streaming costs a step a few Redis commands, not
 * one per token. Deltas are live only: a lost one costs a UI a few characters, never a
 * decision, so failures to publish are reported and otherwise ignored.
 */
export function createDeltaPublisher(
  append: (event: RunEvent) => Promise<void>,
  runId: string,
  step: number,
  onError: (err: unknown) => void,
  batching: DeltaBatching = DEFAULT_DELTA_BATCHING,
) {
  let text = '';
  let calls: ToolCallDelta[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  let sent: Promise<void> = Promise.resolve();

  /** The batch written so far, as an event (none if empty); the publisher starts a new one. */
  const cut = (): RunEvent | undefined => {
    clearTimeout(timer);
    timer = undefined;
    if (size === 0) return undefined;
    const data = { ...(text ? { text } : {}), ...(calls.length ? { toolCalls: calls } : {}) };
    text = '';
    calls = [];
    size = 0;
    return runEvent('model.delta', runId, step, data);
  };

  const flush = (): Promise<void> => {
    const event = cut();
    // Chained, so batches reach the stream in the order they were written.
    if (event) sent = sent.then(() => append(event).catch(onError));
    return sent;
  };

  return {
    push(delta: ModelDelta) {
      if (delta.content) text += delta.content;
      if (delta.toolCall) {
        const last = calls.at(-1);
        // Consecutive argument pieces of one call merge; a new call (or its id and name) starts an entry.
        if (last && last.index === delta.toolCall.index && !delta.toolCall.id && !delta.toolCall.name) {
          last.arguments = (last.arguments ?? '') + (delta.toolCall.arguments ?? '');
        } else {
          calls.push({ ...delta.toolCall });
        }
      }
      size += (delta.content?.length ?? 0) + (delta.toolCall?.arguments?.length ?? 0) + (delta.toolCall?.name?.length ?? 0);
      if (size >= batching.maxChars) void flush();
      else timer ??= setTimeout(() => void flush(), batching.intervalMs);
    },
    /** Sends what is left and waits for every batch, so the deltas precede the step's own events. */
    flush,
    /**
     * Waits for the batches sent so far and hands back what is left, unsent, for the caller
     * to write with its next write to the run (one round trip less per step).
     */
    async rest(): Promise<RunEvent | undefined> {
      const event = cut();
      await sent;
      return event;
    },
  };
}
