import type { ApprovalView, RunStatus, RunTrace, RunView } from '@rein/contract';
import { TERMINAL_STATUSES } from '@rein/contract';

/**
 * Pure translation between Rein's runs and the LangGraph API's shapes (threads, runs,
 * states, messages, interrupts). No rule lives here: what a run may do is decided by the
 * run and approval services; this only renames.
 */

/** A message in LangChain's serialized shape, as the SDK's `Message` type reads it. */
export type LgMessage =
  | { type: 'human'; id: string; content: string }
  | {
      type: 'ai';
      id: string;
      content: string;
      tool_calls: Array<{ id: string; name: string; args: Record<string, unknown>; type: 'tool_call' }>;
      invalid_tool_calls: [];
    }
  | { type: 'tool'; id: string; content: string; tool_call_id: string; name: string; status: 'success' | 'error' };

export type LgRunStatus = 'pending' | 'running' | 'error' | 'success' | 'timeout' | 'interrupted';
export type LgThreadStatus = 'idle' | 'busy' | 'interrupted' | 'error';

/** An interrupt as the SDK reads it: one per pending approval, its id the approval id. */
export interface LgInterrupt {
  id: string;
  value: {
    approval_id: string;
    tool: string;
    arguments: unknown;
    summary: string;
    risk: string;
    required_role: string;
    expires_at: string;
  };
  when: 'during';
  resumable: true;
  ns: string[];
}

/** The node names a Rein step is shown as: the model's turn, then the tool calls it asked for. */
export const NODES = { agent: 'agent', tools: 'tools' } as const;

/** `pending_approval` is LangGraph's interrupted run (resumed by a command); a cancel is an interrupt too. */
export function lgRunStatus(run: Pick<RunView, 'status' | 'reason'>): LgRunStatus {
  switch (run.status) {
    case 'queued':
      return 'pending';
    case 'running':
    case 'waiting':
      return 'running';
    case 'pending_approval':
      return 'interrupted';
    case 'succeeded':
      return 'success';
    case 'cancelled':
      return 'interrupted';
    case 'failed':
      return run.reason === 'deadline' ? 'timeout' : 'error';
  }
}

/** A thread's status is its latest run's: live → busy, parked → interrupted, failed → error. */
export function lgThreadStatus(latest: Pick<RunView, 'status'> | undefined): LgThreadStatus {
  if (!latest) return 'idle';
  if (latest.status === 'pending_approval') return 'interrupted';
  if (latest.status === 'failed') return 'error';
  return TERMINAL_STATUSES.includes(latest.status as RunStatus) ? 'idle' : 'busy';
}

/** A pending approval as an interrupt: what a person needs to decide it, and the approval's id to name it. */
export function lgInterrupt(a: ApprovalView): LgInterrupt {
  return {
    id: a.id,
    value: {
      approval_id: a.id,
      tool: a.toolName,
      arguments: a.approvedArguments ?? a.arguments,
      summary: a.summary,
      risk: a.risk,
      required_role: a.requiredRole,
      expires_at: a.expiresAt,
    },
    when: 'during',
    resumable: true,
    ns: [`${NODES.tools}:${a.runId}.${a.step}`],
  };
}

const args = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };

/** One committed step (or a park's pending calls) and the messages it added, for history. */
export interface StepMessages {
  runId: string;
  /** The step's index, or -1 for the run's input. */
  step: number;
  messages: LgMessage[];
}

/**
 * A run's conversation as LangChain messages, one entry per checkpoint: its input, each
 * committed step (the model's turn with its tool calls, then one tool message per call
 * that ran), the final answer with the last step, and a parked run's pending calls.
 */
export function runMessages(trace: RunTrace, pending: ApprovalView[]): StepMessages[] {
  const out: StepMessages[] = [
    { runId: trace.runId, step: -1, messages: [{ type: 'human', id: `${trace.runId}:input`, content: trace.input }] },
  ];
  const decided = new Set<string>();
  for (const s of trace.steps) {
    const calls = s.toolCalls;
    const messages: LgMessage[] = [];
    const last = s === trace.steps[trace.steps.length - 1];
    const answer = last && calls.length === 0 && trace.finalAnswer !== null ? trace.finalAnswer : (s.thought ?? '');
    messages.push({
      type: 'ai',
      id: `${trace.runId}:${s.index}`,
      content: answer,
      tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: args(c.arguments), type: 'tool_call' as const })),
      invalid_tool_calls: [],
    });
    for (const c of calls) {
      decided.add(c.id);
      if (c.outcome === 'awaiting_approval' || c.outcome === 'awaiting_child') continue;
      messages.push({
        type: 'tool',
        id: `${trace.runId}:${s.index}:${c.id}`,
        content: c.observation,
        tool_call_id: c.id,
        name: c.name,
        status: c.outcome === 'ok' ? 'success' : 'error',
      });
    }
    out.push({ runId: trace.runId, step: s.index, messages });
  }
  // A parked step is committed without its record: its calls are the approvals it waits for.
  const waiting = pending.filter((a) => !decided.has(a.toolCallId));
  const step = waiting[0]?.step;
  if (step !== undefined) {
    out.push({
      runId: trace.runId,
      step,
      messages: [
        {
          type: 'ai',
          id: `${trace.runId}:${step}`,
          content: '',
          tool_calls: waiting.map((a) => ({ id: a.toolCallId, name: a.toolName, args: args(a.arguments), type: 'tool_call' as const })),
          invalid_tool_calls: [],
        },
      ],
    });
  }
  // A run that answered after its last recorded step (or with none): the answer is a message of its own.
  const lastStep = trace.steps[trace.steps.length - 1];
  if (trace.finalAnswer !== null && (!lastStep || lastStep.toolCalls.length > 0)) {
    const index = (lastStep?.index ?? -1) + 1;
    out.push({
      runId: trace.runId,
      step: index,
      messages: [{ type: 'ai', id: `${trace.runId}:${index}`, content: trace.finalAnswer, tool_calls: [], invalid_tool_calls: [] }],
    });
  }
  return out;
}

/** The text of the new turn in a LangGraph input: `{messages: [...]}` (its last human message), or a bare string. */
export function inputText(input: unknown): string | undefined {
  if (typeof input === 'string') return input;
  if (input === null || typeof input !== 'object') return undefined;
  const messages = (input as { messages?: unknown }).messages;
  const list = Array.isArray(messages) ? messages : typeof messages === 'string' ? [messages] : [];
  for (const m of [...list].reverse()) {
    if (typeof m === 'string') return m;
    if (m === null || typeof m !== 'object') continue;
    const { type, role, content } = m as { type?: unknown; role?: unknown; content?: unknown };
    if (!['human', 'user'].includes(String(type ?? role))) continue;
    if (typeof content === 'string') return content;
    if (Array.isArray(content))
      return content
        .flatMap((p) =>
          p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' ? [String((p as { text?: unknown }).text)] : [],
        )
        .join('');
  }
  return undefined;
}

/** A checkpoint id names a run and the step it ends with: `<runId>:<step>` (`-1`: the input). */
export const checkpointId = (runId: string, step: number) => `${runId}:${step}`;

/** `multitask_strategy` is `ifBusy`, with the same four values. */
export type MultitaskStrategy = 'reject' | 'enqueue' | 'interrupt' | 'rollback';
