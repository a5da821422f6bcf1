import type { ModelToolCall } from '../schemas/message.js';
import type { ToolCallRecord } from '../schemas/run.js';
import { hashArguments } from '../tools/argument-hash.js';

/** Identity of a call for loop detection: the tool and its arguments, key order ignored. */
export function callSignature(name: string, rawArguments: unknown): string {
  let args: unknown = rawArguments;
  if (typeof rawArguments === 'string') {
    try {
      args = JSON.parse(rawArguments);
    } catch {
      args = rawArguments;
    }
  }
  return `${name}:${hashArguments(args)}`;
}

export interface LoopVerdict {
  /** A call asked for the limit-th time: the run must stop (`repeated_call`). */
  exhausted?: ModelToolCall;
  /** Earlier identical calls, by index in this reply: read tools answer from them. */
  earlier: Map<number, ToolCallRecord>;
}

/**
 * Looks for identical calls in the run's history. A repeat of a read tool is answered
 * from the earlier result; the `limit`-th repeat of any call stops the run instead of
 * letting the model loop until the step limit.
 */
export function checkRepeats(history: ToolCallRecord[], calls: ModelToolCall[], limit: number): LoopVerdict {
  const earlier = new Map<number, ToolCallRecord>();
  const seen = new Map<string, ToolCallRecord[]>();
  for (const r of history) {
    const sig = callSignature(r.name, r.arguments);
    seen.set(sig, [...(seen.get(sig) ?? []), r]);
  }
  for (const [index, call] of calls.entries()) {
    const previous = seen.get(callSignature(call.name, call.arguments)) ?? [];
    if (previous.length >= limit) return { exhausted: call, earlier };
    const lastOk = previous.findLast((r) => r.outcome === 'ok');
    if (lastOk) earlier.set(index, lastOk);
  }
  return { earlier };
}

/** The tool that has now failed `limit` times in a row (across steps), if any. */
export function failingTool(history: ToolCallRecord[], limit: number): string | undefined {
  const names = new Set(history.map((r) => r.name));
  for (const name of names) {
    let streak = 0;
    for (const r of history.filter((h) => h.name === name).reverse()) {
      if (r.outcome !== 'error') break;
      streak++;
    }
    if (streak >= limit) return name;
  }
  return undefined;
}
