// Follows a run's server-sent events and prints them the way the seeds print a ReAct
// trace (Thought / Action / Observe per 轮). Shared by `npm run demo` and `npm run watch`.
import { API, KEY } from './fleet-client.mjs';

const args = (a) =>
  Object.entries(a ?? {})
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
const clip = (s, n = 220) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** Yields the run's events until it finishes; reconnects with Last-Event-ID if the stream drops. */
export async function* runEvents(runId) {
  let lastId = '0';
  for (;;) {
    let res;
    try {
      res = await fetch(`${API}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${KEY}`, 'last-event-id': lastId } });
    } catch {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    if (!res.ok) throw new Error(`GET /v1/runs/${runId}/events: ${res.status} ${await res.text()}`);
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
          const event = JSON.parse(data.slice(6));
          yield event;
          if (event.type === 'run.finished') return;
        }
      }
    } catch {
      // dropped: reconnect and resume after the last event seen
    }
  }
}

/** Prints one event; tool results of a step are printed when the step finishes. */
export function createTraceRenderer(out = console.log) {
  let tools = [];
  let lastStep = -1;
  return (e) => {
    if (e.type === 'tool.result') tools.push(e.data);
    if (e.type === 'step.finished' && e.data.outcome !== 'answered') {
      out(`--- 第 ${e.step + 1} 轮 / step ${e.step + 1}${e.step === lastStep ? ' (resumed after the decision)' : ''} ---`);
      lastStep = e.step;
      if (e.data.thought) out(`[Thought]  ${e.data.thought}`);
      for (const t of tools) {
        out(`[Action ]  ${t.name}(${args(t.arguments)})`);
        out(`[Observe]  ${t.outcome === 'ok' ? clip(t.observation) : `(${t.outcome}) ${clip(t.observation)}`}`);
      }
      tools = [];
    }
    if (e.type === 'approval.requested') out(`\n[Approval] ${e.data.risk} — ${e.data.summary}  (${e.data.approvalId})`);
    if (e.type === 'approval.decided')
      out(
        `[Decision] ${e.data.status}${e.data.decidedBy ? ` by ${e.data.decidedBy}` : ''}${e.data.comment ? `: ${e.data.comment}` : ''}\n`,
      );
    if (e.type === 'step.finished' && e.data.outcome === 'answered')
      out(`--- 第 ${e.step + 1} 轮 / step ${e.step + 1} ---\n[Action ]  无 → 输出最终答案 / final answer`);
  };
}

/** The closing lines: final answer, steps, tokens, cost, elapsed. */
export async function printSummary(runId, out = console.log) {
  const trace = await (await fetch(`${API}/v1/runs/${runId}/trace`, { headers: { authorization: `Bearer ${KEY}` } })).json();
  out(`\n最终回答 / final answer (${trace.status}${trace.reason ? `, ${trace.reason}` : ''}):\n${trace.finalAnswer}`);
  out(`\nsteps ${trace.steps.length} · tokens ${trace.totalTokens} · cost ${trace.costUsd} USD · elapsed ${trace.elapsedMs} ms`);
}
