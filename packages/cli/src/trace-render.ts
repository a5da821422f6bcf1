import type { ReinClient, RunEvent } from '@rein/client';

type Out = (line: string) => void;
const print: Out = (line) => process.stdout.write(`${line}\n`);

/** The words the trace is printed with: plain English by default; an app or a demo passes its own language. */
export interface TraceLabels {
  input: string;
  /** The heading of step `n` (1-based). */
  step: (n: number) => string;
  finalAnswer: string;
  /** The action line of the step that answers instead of calling a tool. */
  answers: string;
}

export const ENGLISH_LABELS: TraceLabels = {
  input: 'input',
  step: (n) => `step ${n}`,
  finalAnswer: 'final answer',
  answers: 'none → final answer',
};

const args = (a: unknown) =>
  Object.entries((a ?? {}) as Record<string, unknown>)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
const clip = (s: string, n = 220) => (s.length > n ? `${s.slice(0, n)}…` : s);

/**
 * Prints one event the way a ReAct trace reads (Thought / Action / Observe per step);
 * tool results print when their step finishes. While the model writes, its prose prints
 * line by line and each tool call it starts once, by name: arguments print whole, on
 * the Action line, never piece by piece. A parent's stream carries its sub-agents' events
 * too: with `rootRunId`, theirs print indented under the child's own run and step numbers.
 */
export function createTraceRenderer(out: Out = print, labels: TraceLabels = ENGLISH_LABELS, rootRunId?: string) {
  const runs = new Map<string, { tools: Array<Record<string, unknown>>; lastStep: number; writing: string }>();
  const stateOf = (runId: string) => {
    const known = runs.get(runId);
    if (known) return known;
    const state = { tools: [] as Array<Record<string, unknown>>, lastStep: -1, writing: '' };
    runs.set(runId, state);
    return state;
  };
  return (e: RunEvent) => {
    const child = rootRunId !== undefined && e.runId !== rootRunId;
    const emit: Out = child
      ? (text) =>
          out(
            text
              .split('\n')
              .map((l) => (l ? `    ↳ ${l}` : l))
              .join('\n'),
          )
      : out;
    const heading = (n: number) => (child ? `sub-agent run ${e.runId.slice(0, 8)} · ${labels.step(n)}` : labels.step(n));
    const state = stateOf(e.runId);
    const flushWriting = () => {
      if (state.writing.trim()) emit(`[Writing]  ${state.writing.trim()}`);
      state.writing = '';
    };
    const step = e.step ?? 0;
    const data = (e.data ?? {}) as Record<string, unknown>;
    if (e.type === 'tool.result') state.tools.push(data);
    if (e.type === 'model.delta') {
      state.writing += typeof data.text === 'string' ? data.text : '';
      const lines = state.writing.split('\n');
      state.writing = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) emit(`[Writing]  ${line.trim()}`);
      const calls = (data.toolCalls ?? []) as Array<{ name?: string }>;
      for (const { name } of calls) {
        if (!name) continue;
        flushWriting();
        emit(`[Writing]  → ${name}(…)`);
      }
    }
    if (e.type === 'step.finished') flushWriting();
    if (e.type === 'step.finished' && data.outcome !== 'answered') {
      emit(`--- ${heading(step + 1)}${step === state.lastStep ? ' (resumed after the decision)' : ''} ---`);
      state.lastStep = step;
      if (data.thought) emit(`[Thought]  ${data.thought}`);
      for (const t of state.tools) {
        const observation = String(t.observation ?? '');
        emit(`[Action ]  ${t.name}(${args(t.arguments)})`);
        emit(`[Observe]  ${t.outcome === 'ok' ? clip(observation) : `(${t.outcome}) ${clip(observation)}`}`);
      }
      state.tools = [];
    }
    if (e.type === 'approval.requested') emit(`\n[Approval] ${data.risk} — ${data.summary}  (${data.approvalId})`);
    if (e.type === 'approval.decided')
      emit(`[Decision] ${data.status}${data.decidedBy ? ` by ${data.decidedBy}` : ''}${data.comment ? `: ${data.comment}` : ''}\n`);
    if (e.type === 'step.finished' && data.outcome === 'answered') emit(`--- ${heading(step + 1)} ---\n[Action ]  ${labels.answers}`);
    if (child && e.type === 'run.finished') emit(`(sub-agent run ${e.runId.slice(0, 8)} ${String(data.status ?? 'finished')})`);
  };
}

/** The closing lines: final answer, steps, tokens, cost, elapsed. */
export async function printSummary(
  client: ReinClient,
  runId: string,
  out: Out = print,
  labels: TraceLabels = ENGLISH_LABELS,
): Promise<void> {
  const trace = await client.runs.trace(runId);
  out(`\n${labels.finalAnswer} (${trace.status}${trace.reason ? `, ${trace.reason}` : ''}):\n${trace.finalAnswer}`);
  out(`\nsteps ${trace.steps.length} · tokens ${trace.totalTokens} · cost ${trace.costUsd} USD · elapsed ${trace.elapsedMs} ms`);
}
