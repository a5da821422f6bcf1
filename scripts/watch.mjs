#!/usr/bin/env node
// `npm run watch -- <runId>`: follows a run live (server-sent events, resumed with
// Last-Event-ID if the connection drops) and renders it like the seeds' trace.
import { API, call } from './lib/fleet-client.mjs';
import { createTraceRenderer, printSummary, runEvents } from './lib/trace-render.mjs';

const runId = process.argv[2];
if (!runId) {
  console.error('usage: npm run watch -- <runId>   (REIN_API_URL and REIN_API_KEYS select the API and key)');
  process.exit(2);
}
const run = await call('GET', `${API}/v1/runs/${runId}`);
console.log(`用户输入 / input: ${run.input}\nrun ${run.id}  trace ${run.traceId}  status ${run.status}\n`);
const render = createTraceRenderer();
for await (const e of runEvents(runId)) render(e);
await printSummary(runId);
