import type { LoopGuardState, ModelToolCall, ToolCallRecord } from '@rein/contract';
import { hashArguments } from '../app/argument-hash.js';

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

export const EMPTY_GUARD: LoopGuardState = { calls: {}, failures: {} };

/**
 * The guard state after `records` of step `step`: kept on the run and advanced by each
 * committed step, so that checking a reply never re-reads the run's history.
 */
export function advanceGuard(state: LoopGuardState, step: number, records: ToolCallRecord[]): LoopGuardState {
  const calls = { ...state.calls };
  const failures = { ...state.failures };
  for (const r of records) {
    const sig = callSignature(r.name, r.arguments);
    const seen = calls[sig];
    calls[sig] = {
      n: (seen?.n ?? 0) + 1,
      ...(r.outcome === 'ok' ? { ok: [step, r.id] as [number, string] } : seen?.ok ? { ok: seen.ok } : {}),
    };
    failures[r.name] = r.outcome === 'error' ? (failures[r.name] ?? 0) + 1 : 0;
  }
  return { calls, failures };
}

/** The state of a run committed before the guard was kept on it: rebuilt once from its steps. */
export function guardFromHistory(steps: Array<{ index: number; toolCalls: ToolCallRecord[] }>): LoopGuardState {
  return steps.reduce((state, s) => advanceGuard(state, s.index, s.toolCalls), EMPTY_GUARD);
}

/** Where an earlier successful identical call's record is: its step and tool call id. */
export type EarlierCall = [step: number, toolCallId: string];

export interface LoopVerdict {
  /** A call asked for the limit-th time: the run must stop (`repeated_call`). */
  exhausted?: ModelToolCall;
  /** Earlier identical successful calls, by index in this reply: read tools answer from them. */
  earlier: Map<number, EarlierCall>;
}

/**
 * Looks for identical calls in the run's history. A repeat of a read tool is answered
 * from the earlier result; the `limit`-th repeat of any call stops the run instead of
 * letting the model loop until the step limit.
 */
export function checkRepeats(state: LoopGuardState, calls: ModelToolCall[], limit: number): LoopVerdict {
  const earlier = new Map<number, EarlierCall>();
  for (const [index, call] of calls.entries()) {
    const seen = state.calls[callSignature(call.name, call.arguments)];
    if ((seen?.n ?? 0) >= limit) return { exhausted: call, earlier };
    if (seen?.ok) earlier.set(index, seen.ok);
  }
  return { earlier };
}

/** The tool that has now failed `limit` times in a row (across steps), if any. */
export function failingTool(state: LoopGuardState, limit: number): string | undefined {
  return Object.entries(state.failures).find(([, streak]) => streak >= limit)?.[0];
}
