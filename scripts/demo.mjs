#!/usr/bin/env node
// `npm run demo`: the seeds' late-order complaint against the running fleet (or one it
// starts), printed live step by step, approved when it parks, then the final answer.
import { API, APPROVER, call, ensureFleet } from './lib/fleet-client.mjs';
import { createTraceRenderer, printSummary, runEvents } from './lib/trace-render.mjs';

const input = process.argv.slice(2).join(' ') || '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
const stopFleet = await ensureFleet();

const run = await call('POST', `${API}/v1/runs`, { input });
console.log(`\n用户输入 / input: ${input}\nrun ${run.id}  trace ${run.traceId}\n`);

const render = createTraceRenderer();
let pending;
for await (const e of runEvents(run.id)) {
  render(e);
  if (e.type === 'approval.requested') pending = e.data;
  if (e.type === 'step.finished' && e.data.outcome === 'parked' && pending) {
    console.log('           the run is parked (pending_approval) and nothing has happened yet; approving as the requesting user…');
    await call('POST', `${APPROVER}/v1/approvals/${pending.approvalId}/approve`, { comment: 'approved from npm run demo' });
    pending = undefined;
  }
}
await printSummary(run.id);
stopFleet();
process.exit(0);
