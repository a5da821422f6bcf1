import { type Message, type Part, type Task, TaskState } from '@a2a-js/sdk';
import { z } from 'zod';

/**
 * What a remote agent's task means for the call waiting on it: still going, an answer, a
 * failure, or a question for the caller (input-required, auth-required): the call ends
 * with it as the observation instead of waiting for an answer nobody will give, or, for
 * input-required when the app says so, asks a person (`question` is what the agent said).
 */
export type RemoteOutcome =
  | { kind: 'pending' }
  | { kind: 'answer'; text: string }
  | { kind: 'failed'; text: string }
  | { kind: 'needs_input'; text: string; question: string; auth: boolean };

/**
 * A remote task id Rein keeps: it goes into the effect ledger, Redis, logs and what the
 * model reads, so an agent's id must be short and free of control characters.
 */
export const keepableTaskId = (id: string): boolean => /^[^\p{Cc}]{1,256}$/u.test(id);

/** A part as text: text as it is, data as JSON, a file by its name, type and address. */
function partText(part: Part): string {
  const c = part.content;
  if (!c) return '';
  if (c.$case === 'text') return c.value;
  if (c.$case === 'data') return JSON.stringify(c.value ?? null);
  const name = part.filename || 'file';
  return c.$case === 'url'
    ? `[${name} (${part.mediaType || 'file'}): ${c.value}]`
    : `[${name} (${part.mediaType || 'file'}, ${c.value.length} bytes)]`;
}

export const messageText = (message: Message | undefined): string => (message?.parts ?? []).map(partText).filter(Boolean).join('\n');

/** The task's artifacts as one text, each under its name when there are several. */
function artifactsText(task: Task): string {
  const several = task.artifacts.length > 1;
  return task.artifacts
    .map((a) => {
      const body = a.parts.map(partText).filter(Boolean).join('\n');
      return several && a.name ? `${a.name}:\n${body}` : body;
    })
    .filter(Boolean)
    .join('\n\n');
}

/** The outcome of a remote task as last seen. */
export function remoteOutcome(agent: string, task: Task): RemoteOutcome {
  const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
  const said = messageText(task.status?.message);
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED:
      return { kind: 'answer', text: artifactsText(task) || said || `(${agent} completed the task without an answer)` };
    case TaskState.TASK_STATE_FAILED:
      return { kind: 'failed', text: `${agent} failed the task${said ? `: ${said}` : ''}` };
    case TaskState.TASK_STATE_REJECTED:
      return { kind: 'failed', text: `${agent} declined the task${said ? `: ${said}` : ''}` };
    case TaskState.TASK_STATE_CANCELED:
      return { kind: 'failed', text: `${agent}'s task was cancelled${said ? `: ${said}` : ''}` };
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED: {
      const what = state === TaskState.TASK_STATE_AUTH_REQUIRED ? 'authentication' : 'more input';
      return {
        kind: 'needs_input',
        question: said,
        auth: state === TaskState.TASK_STATE_AUTH_REQUIRED,
        text: `${agent} needs ${what} before it can go on${said ? `: ${said}` : '.'} The call ended without its answer; tell the user what it asks.`,
      };
    }
    default:
      return { kind: 'pending' };
  }
}

/**
 * What a remote call keeps in the effect ledger as its handle: its task, and while it
 * answers a question (the approval `sending`, then `sent`), how far the answer got, so a
 * worker that stops mid-answer never sends it twice. A bare task id (no answer yet) is
 * kept as it is.
 */
export interface RemoteCallMemo {
  task: string;
  sending?: string;
  sent?: string;
}

const memoSchema = z.strictObject({ task: z.string(), sending: z.string().optional(), sent: z.string().optional() });

export const memoHandle = (memo: RemoteCallMemo): string =>
  memo.sending === undefined && memo.sent === undefined ? memo.task : JSON.stringify(memo);

export function memoOf(handle: string): RemoteCallMemo {
  if (!handle.startsWith('{')) return { task: handle };
  try {
    return memoSchema.parse(JSON.parse(handle));
  } catch {
    return { task: handle };
  }
}
