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
 * the Action line, never piece by piece.
 */
export function createTraceRenderer(out: Out = print, labels: TraceLabels = ENGLISH_LABELS) {
  let tools: Array<Record<string, unknown>> = [];
  let lastStep = -1;
  let writing = '';
  const flushWriting = () => {
    if (writing.trim()) out(`[Writing]  ${writing.trim()}`);
    writing = '';
  };
  return (e: RunEvent) => {
    const step = e.step ?? 0;
    const data = (e.data ?? {}) as Record<string, unknown>;
    if (e.type === 'tool.result') tools.push(data);
    if (e.type === 'model.delta') {
      writing += typeof data.text === 'string' ? data.text : '';
      const lines = writing.split('\n');
      writing = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) out(`[Writing]  ${line.trim()}`);
      const calls = (data.toolCalls ?? []) as Array<{ name?: string }>;
      for (const { name } of calls) {
        if (!name) continue;
        flushWriting();
        out(`[Writing]  → ${name}(…)`);
      }
    }
    if (e.type === 'step.finished') flushWriting();
    if (e.type === 'step.finished' && data.outcome !== 'answered') {
      out(`--- ${labels.step(step + 1)}${step === lastStep ? ' (resumed after the decision)' : ''} ---`);
      lastStep = step;
      if (data.thought) out(`[Thought]  ${data.thought}`);
      for (const t of tools) {
        const observation = String(t.observation ?? '');
        out(`[Action ]  ${t.name}(${args(t.arguments)})`);
        out(`[Observe]  ${t.outcome === 'ok' ? clip(observation) : `(${t.outcome}) ${clip(observation)}`}`);
      }
      tools = [];
    }
    if (e.type === 'approval.requested') out(`\n[Approval] ${data.risk} — ${data.summary}  (${data.approvalId})`);
    if (e.type === 'approval.decided')
      out(`[Decision] ${data.status}${data.decidedBy ? ` by ${data.decidedBy}` : ''}${data.comment ? `: ${data.comment}` : ''}\n`);
    if (e.type === 'step.finished' && data.outcome === 'answered') out(`--- ${labels.step(step + 1)} ---\n[Action ]  ${labels.answers}`);
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
