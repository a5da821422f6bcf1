import type { ReinClient, RunEvent } from '@rein/client';

type Out = (line: string) => void;
const print: Out = (line) => process.stdout.write(`${line}\n`);

const args = (a: unknown) =>
  Object.entries((a ?? {}) as Record<string, unknown>)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
const clip = (s: string, n = 220) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** Prints one event the way a ReAct trace reads (Thought / Action / Observe per step); tool results print when their step finishes. */
export function createTraceRenderer(out: Out = print) {
  let tools: Array<Record<string, unknown>> = [];
  let lastStep = -1;
  return (e: RunEvent) => {
    const step = e.step ?? 0;
    const data = (e.data ?? {}) as Record<string, unknown>;
    if (e.type === 'tool.result') tools.push(data);
    // The reply as the model writes it, one line per batch; the step's own lines follow when it ends.
    if (e.type === 'model.delta') {
      const calls = (data.toolCalls ?? []) as Array<{ name?: string; arguments?: string }>;
      const written = [data.text ?? '', ...calls.map((c) => `${c.name ? `${c.name}(` : ''}${c.arguments ?? ''}`)].join('');
      if (written) out(`[Writing]  ${written}`);
    }
    if (e.type === 'step.finished' && data.outcome !== 'answered') {
      out(`--- 第 ${step + 1} 轮 / step ${step + 1}${step === lastStep ? ' (resumed after the decision)' : ''} ---`);
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
    if (e.type === 'step.finished' && data.outcome === 'answered')
      out(`--- 第 ${step + 1} 轮 / step ${step + 1} ---\n[Action ]  无 → 输出最终答案 / final answer`);
  };
}

/** The closing lines: final answer, steps, tokens, cost, elapsed. */
export async function printSummary(client: ReinClient, runId: string, out: Out = print): Promise<void> {
  const trace = await client.runs.trace(runId);
  out(`\n最终回答 / final answer (${trace.status}${trace.reason ? `, ${trace.reason}` : ''}):\n${trace.finalAnswer}`);
  out(`\nsteps ${trace.steps.length} · tokens ${trace.totalTokens} · cost ${trace.costUsd} USD · elapsed ${trace.elapsedMs} ms`);
}
