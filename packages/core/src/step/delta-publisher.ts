import type { RunEvent } from '@rein/contract';
import type { ModelDelta } from '../adapters/model/model-gateway.js';
import { runEvent } from '../policy/run/run-event.js';
import { safeCut } from '../shared/guards/pii-masker.js';

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
 * decision, so failures to publish are reported and otherwise ignored. Readers receive
 * each event PII-masked; so that no phone number or address is split across two events
 * (and so escapes the masker), a batch ends where no match can be cut (`safeCut`) and
 * the tail waits for the next batch, or for the reply's end.
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

  /** The batch written so far, as an event (none if empty); the publisher starts a new one. `final`: the reply ended, hold nothing back. */
  const cut = (final: boolean): RunEvent | undefined => {
    clearTimeout(timer);
    timer = undefined;
    const at = final ? text.length : safeCut(text);
    const held = text.slice(at);
    const sent = text.slice(0, at);
    if (!sent && calls.length === 0) return undefined;
    const data = { ...(sent ? { text: sent } : {}), ...(calls.length ? { toolCalls: calls } : {}) };
    text = held;
    calls = [];
    size = held.length;
    return runEvent('model.delta', runId, step, data);
  };

  const flush = (final = true): Promise<void> => {
    const event = cut(final);
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
      if (size >= batching.maxChars) void flush(false);
      else timer ??= setTimeout(() => void flush(false), batching.intervalMs);
    },
    /** Sends what is left and waits for every batch, so the deltas precede the step's own events. */
    flush: () => flush(true),
    /**
     * Waits for the batches sent so far and hands back what is left, unsent, for the caller
     * to write with its next write to the run (one round trip less per step).
     */
    async rest(): Promise<RunEvent | undefined> {
      const event = cut(true);
      await sent;
      return event;
    },
  };
}
