#!/usr/bin/env node
// `npm run demo`: the seeds' late-order complaint against the running fleet (or one it
// starts), printed live step by step, approved when it parks, then the final answer.
import { API as api, APPROVER as approver, call, ensureFleet, KEY as key } from './lib/fleet-client.mjs';

const input = process.argv.slice(2).join(' ') || '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
const headers = { authorization: `Bearer ${key}` };
const stopFleet = await ensureFleet();
const post = (url, body) => call('POST', url, body);
const args = (a) =>
  Object.entries(a ?? {})
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
const clip = (s, n = 220) => (s.length > n ? `${s.slice(0, n)}…` : s);

const run = await post(`${api}/v1/runs`, { input });
console.log(`\n用户输入 / input: ${input}\nrun ${run.id}  trace ${run.traceId}\n`);

// Follow the run's server-sent events; tool results of a step print when the step finishes.
const res = await fetch(`${api}/v1/runs/${run.id}/events`, { headers });
const decoder = new TextDecoder();
let buffer = '';
let pendingTools = [];
let pendingApproval;
let lastStep = -1;
let finished;
for await (const chunk of res.body) {
  buffer += decoder.decode(chunk, { stream: true });
  for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
    const frame = buffer.slice(0, cut);
    buffer = buffer.slice(cut + 2);
    const data = frame.split('\n').find((l) => l.startsWith('data: '));
    if (!data) continue;
    const e = JSON.parse(data.slice(6));
    if (e.type === 'tool.result') pendingTools.push(e.data);
    if (e.type === 'step.finished' && e.data.outcome !== 'answered') {
      console.log(`--- 第 ${e.step + 1} 轮 / step ${e.step + 1}${e.step === lastStep ? ' (resumed after the decision)' : ''} ---`);
      lastStep = e.step;
      if (e.data.thought) console.log(`[Thought]  ${e.data.thought}`);
      for (const t of pendingTools) {
        console.log(`[Action ]  ${t.name}(${args(t.arguments)})`);
        console.log(`[Observe]  ${t.outcome === 'ok' ? clip(t.observation) : `(${t.outcome}) ${clip(t.observation)}`}`);
      }
      pendingTools = [];
    }
    if (e.type === 'approval.requested') pendingApproval = e.data;
    if (e.type === 'step.finished' && e.data.outcome === 'parked' && pendingApproval) {
      console.log(`\n[Approval] ${pendingApproval.risk} — ${pendingApproval.summary}`);
      console.log('           the run is parked (pending_approval) and nothing has happened yet; approving as the requesting user…');
      await post(`${approver}/v1/approvals/${pendingApproval.approvalId}/approve`, { comment: 'approved from npm run demo' });
      console.log('           approved; the run resumes on whichever worker takes the job\n');
      pendingApproval = undefined;
    }
    if (e.type === 'step.finished' && e.data.outcome === 'answered')
      console.log(`--- 第 ${e.step + 1} 轮 / step ${e.step + 1} ---\n[Action ]  无 → 输出最终答案 / final answer`);
    if (e.type === 'run.finished') finished = e.data;
  }
  if (finished) break;
}

const trace = await (await fetch(`${api}/v1/runs/${run.id}/trace`, { headers })).json();
console.log(`\n最终回答 / final answer (${finished.status}, ${finished.reason}):\n${trace.finalAnswer}`);
console.log(`\nsteps ${trace.steps.length} · tokens ${trace.totalTokens} · elapsed ${trace.elapsedMs} ms`);
stopFleet();
process.exit(0);
