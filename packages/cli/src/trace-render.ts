import type { RunEvent } from '@rein/core';
import type { FleetClient } from './fleet-client.js';

type Out = (line: string) => void;
const print: Out = (line) => process.stdout.write(`${line}\n`);

const args = (a: unknown) =>
  Object.entries((a ?? {}) as Record<string, unknown>)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
const clip = (s: string, n = 220) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** Yields the run's events until it finishes; reconnects with Last-Event-ID if the stream drops. */
export async function* runEvents(client: FleetClient, runId: string): AsyncGenerator<RunEvent> {
  let lastId = '0';
  for (;;) {
    let res: Response;
    try {
      res = await fetch(`${client.api}/v1/runs/${runId}/events`, {
        headers: { authorization: `Bearer ${client.key}`, 'last-event-id': lastId },
      });
    } catch {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    if (!res.ok || !res.body) throw new Error(`GET /v1/runs/${runId}/events: ${res.status} ${await res.text()}`);
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const id = frame.split('\n').find((l) => l.startsWith('id: '));
          const data = frame.split('\n').find((l) => l.startsWith('data: '));
          if (!data) continue;
          if (id) lastId = id.slice(4);
          const event = JSON.parse(data.slice(6)) as RunEvent;
          yield event;
          if (event.type === 'run.finished') return;
        }
      }
    } catch {
      // dropped: reconnect and resume after the last event seen
    }
  }
}

/** Prints one event the way a ReAct trace reads (Thought / Action / Observe per step); tool results print when their step finishes. */
export function createTraceRenderer(out: Out = print) {
  let tools: Array<Record<string, unknown>> = [];
  let lastStep = -1;
  return (e: RunEvent) => {
    const step = e.step ?? 0;
    const data = (e.data ?? {}) as Record<string, unknown>;
    if (e.type === 'tool.result') tools.push(data);
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
export async function printSummary(client: FleetClient, runId: string, out: Out = print): Promise<void> {
  const trace = await client.call<{
    status: string;
    reason?: string;
    finalAnswer: string;
    steps: unknown[];
    totalTokens: number;
    costUsd: number;
    elapsedMs: number;
  }>('GET', `${client.api}/v1/runs/${runId}/trace`);
  out(`\n最终回答 / final answer (${trace.status}${trace.reason ? `, ${trace.reason}` : ''}):\n${trace.finalAnswer}`);
  out(`\nsteps ${trace.steps.length} · tokens ${trace.totalTokens} · cost ${trace.costUsd} USD · elapsed ${trace.elapsedMs} ms`);
}
