import type { ModelToolCall } from '@rein/contract';

/**
 * Models sometimes give two calls of one reply the same id. A call's id names its effect
 * in the ledger (`run:step:toolCallId`), its approval and its result message, so each call
 * of a step gets an id of its own before anything runs: a repeated id becomes `<id>#<n>`,
 * n its position in the reply (the next free one). Pure, so every attempt at the step —
 * and every later read of its journaled decision — derives the same ids.
 */
export function distinctCallIds(calls: readonly ModelToolCall[]): ModelToolCall[] {
  const seen = new Set(calls.map((c) => c.id));
  const used = new Set<string>();
  return calls.map((call, index) => {
    if (!used.has(call.id)) {
      used.add(call.id);
      return call;
    }
    let n = index;
    let id: string;
    do id = `${call.id}#${n++}`;
    while (seen.has(id) || used.has(id));
    used.add(id);
    return { ...call, id };
  });
}

/** `run:step:toolCallId`: the key a tool call's effect is recorded under and that write tools receive. */
export const idempotencyKey = (runId: string, step: number, toolCallId: string) => `${runId}:${step}:${toolCallId}`;
