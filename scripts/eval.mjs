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
const { rein } = client;
const { scenarios } = JSON.parse(readFileSync(join(root, 'eval', 'scenarios.json'), 'utf8'));
const strict = process.argv.includes('--strict');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);

/** Waits for the run, deciding each approval it parks on as the scenario says, until it finishes. */
async function settle(id, approval) {
  const until = Date.now() + 120_000;
  while (Date.now() < until) {
    const run = await rein.runs.wait(id, { timeoutMs: until - Date.now() });
    if (run.status !== 'pending_approval') return run;
    for (const a of run.pendingApprovals) {
      const decided =
        approval === 'reject'
          ? rein.approvals.reject(a.id, 'rejected by the evaluator')
          : rein.approvals.approve(a.id, { comment: 'approved by the evaluator' });
      await decided.catch(() => {}); // already decided (expired, or decided on an earlier pass)
    }
    // Decided: wait until a worker has resumed it, so `wait` does not answer with the same park.
    const decided = run.pendingApprovals.map((a) => a.id).join();
    const samePark = (r) => r.status === 'pending_approval' && r.pendingApprovals.map((a) => a.id).join() === decided;
    while (samePark(await rein.runs.get(id)) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
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

async function play(scenario, agent) {
  const submitted = await rein.runs.create({
    input: scenario.input,
    ...(agent ? { agent } : {}),
    ...(scenario.limits ? { limits: scenario.limits } : {}),
    metadata: { eval: scenario.id },
  });
  const run = await settle(submitted.id, scenario.approval);
  return { run, trace: await rein.runs.trace(submitted.id) };
}

const stopFleet = await ensureFleet(client);
const results = [];
const savings = { with: 0, without: 0 };
for (const scenario of scenarios.filter((s) => !only || s.id === only)) {
  const { run, trace } = await play(scenario, scenario.agent);
  const { tools, problems } = judge(scenario, run, trace);
  let baselineLine = '';
  if (scenario.baselineAgent) {
    // The same input without the context policy: its tokens are what the policy is measured against.
    const baseline = await play(scenario, scenario.baselineAgent);
    const { tools: _differ, ...expect } = scenario.expect;
    const judged = judge({ ...scenario, expect }, baseline.run, baseline.trace);
    problems.push(...judged.problems.map((p) => `without the context policy: ${p}`));
    savings.with += trace.totalTokens;
    savings.without += baseline.trace.totalTokens;
    baselineLine = `\n      without the context policy (${scenario.baselineAgent}): tokens=${baseline.trace.totalTokens}`;
  }
  results.push({ scenario, pass: problems.length === 0, problems });
  const mark = problems.length === 0 ? 'PASS' : 'FAIL';
  console.log(
    `${mark}  ${scenario.class.padEnd(17)} ${scenario.id.padEnd(22)} ${run.status}/${run.reason ?? '-'}  tools=${tools.join('→') || '(none)'}  tokens=${trace.totalTokens}${baselineLine}${problems.length ? `\n      ${problems.join('; ')}` : ''}`,
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
if (savings.without > 0) {
  const cut = Math.round((100 * (savings.without - savings.with)) / savings.without);
  console.log(`\nContext policy on long tool results: ${savings.with} tokens with it, ${savings.without} without (${cut}% fewer)`);
}
stopFleet();
process.exit(strict && passed !== results.length ? 1 : 0);
