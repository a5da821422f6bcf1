#!/usr/bin/env node
// `npm run eval`: runs eval/scenarios.json against the fleet (the running one, or one it
// starts) — the scripted model by default, or any OpenAI-compatible endpoint the fleet
// points at — and prints the pass rate per scenario class. `--strict` exits 1 unless all pass.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureFleet, fleetClient } from '@rein/cli';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const client = fleetClient();
const { api: API, approver: APPROVER } = client;
const call = (method, url, body) => client.call(method, url, body);
const { scenarios } = JSON.parse(readFileSync(join(root, 'eval', 'scenarios.json'), 'utf8'));
const strict = process.argv.includes('--strict');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);

async function settle(id, approval) {
  const until = Date.now() + 120_000;
  while (Date.now() < until) {
    const run = await call('GET', `${API}/v1/runs/${id}`);
    if (['succeeded', 'failed', 'cancelled'].includes(run.status)) return run;
    if (run.status === 'pending_approval') {
      for (const a of run.pendingApprovals) {
        const decision =
          approval === 'reject'
            ? ['reject', { reason: 'rejected by the evaluator' }]
            : ['approve', { comment: 'approved by the evaluator' }];
        await call('POST', `${APPROVER}/v1/approvals/${a.id}/${decision[0]}`, decision[1]).catch(() => {});
      }
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`run ${id} did not finish within two minutes`);
}

function judge(scenario, run, trace) {
  const problems = [];
  const tools = trace.steps.flatMap((s) => s.toolCalls.map((c) => c.name));
  const e = scenario.expect;
  if (e.tools && JSON.stringify(tools) !== JSON.stringify(e.tools))
    problems.push(`tools ${JSON.stringify(tools)} ≠ ${JSON.stringify(e.tools)}`);
  if (run.status !== e.status) problems.push(`status ${run.status} ≠ ${e.status}`);
  if (e.reason && run.reason !== e.reason) problems.push(`reason ${run.reason} ≠ ${e.reason}`);
  if (e.answerMatches && !new RegExp(e.answerMatches, 'i').test(run.finalAnswer ?? ''))
    problems.push(`answer does not match /${e.answerMatches}/`);
  return { tools, problems };
}

const stopFleet = await ensureFleet(client);
const results = [];
for (const scenario of scenarios.filter((s) => !only || s.id === only)) {
  const submitted = await call('POST', `${API}/v1/runs`, {
    input: scenario.input,
    ...(scenario.limits ? { limits: scenario.limits } : {}),
    metadata: { eval: scenario.id },
  });
  const run = await settle(submitted.id, scenario.approval);
  const trace = await call('GET', `${API}/v1/runs/${submitted.id}/trace`);
  const { tools, problems } = judge(scenario, run, trace);
  results.push({ scenario, pass: problems.length === 0, problems });
  const mark = problems.length === 0 ? 'PASS' : 'FAIL';
  console.log(
    `${mark}  ${scenario.class.padEnd(17)} ${scenario.id.padEnd(22)} ${run.status}/${run.reason ?? '-'}  tools=${tools.join('→') || '(none)'}  tokens=${trace.totalTokens}${problems.length ? `\n      ${problems.join('; ')}` : ''}`,
  );
}

console.log('\nPass rate by class');
const classes = [...new Set(results.map((r) => r.scenario.class))];
for (const c of classes) {
  const of = results.filter((r) => r.scenario.class === c);
  const passed = of.filter((r) => r.pass).length;
  console.log(`  ${c.padEnd(17)} ${passed}/${of.length}  ${Math.round((100 * passed) / of.length)}%`);
}
const passed = results.filter((r) => r.pass).length;
console.log(`  ${'all'.padEnd(17)} ${passed}/${results.length}  ${Math.round((100 * passed) / Math.max(1, results.length))}%`);
stopFleet();
process.exit(strict && passed !== results.length ? 1 : 0);
